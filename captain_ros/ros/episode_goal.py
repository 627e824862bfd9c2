"""A ``RunEpisode`` goal as an :class:`~captain_ros.evaluation.config.EpisodeConfig`, and its
result (no rclpy: the goal and result are read and set by attribute, so plain objects stand in
for the messages in tests).

The goal's empty fields are the policy node's parameters (its ``policy``, ``output_root``) and
zero budgets are the defaults; a goal's ``output_dir`` and ``replay:FILE`` must lie under the
node's ``allowed_root`` (:func:`~captain_ros.ros.access.confine`). The task, seed and budgets are
validated by the config, once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.core.result import FailureCategory, Result
from captain_ros.evaluation.config import BudgetConfig, EpisodeConfig
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.ros.access import confine


def new_episode_id(task: str, seed: int) -> str:
    """``<task>_<seed>_<local time>_<ms>``: the goal's episode id (and default folder name)."""
    ms = int(time.time() * 1000) % 1000
    return f"{task}_{seed}_{time.strftime('%Y%m%dT%H%M%S')}_{ms:03d}"


def goal_config(
    goal: Any, params: Mapping[str, Any], backend: str, episode_id: str
) -> EpisodeConfig:
    """The episode of ``goal`` (``params``: the policy node's parameters; ``backend``: the robot
    node's, which the policy node has already checked is known; ``episode_id``: the folder name
    under ``output_root`` when the goal names none). An unregistered backend raises
    ``UnknownNameError``."""
    root = params["allowed_root"] or params["output_root"]
    policy = goal.policy or params["policy"]
    if goal.policy.startswith("replay:"):  # a goal's file; the node's own parameter is trusted
        policy = "replay:" + str(confine(goal.policy.split(":", 1)[1], root, "replay file"))
    out_dir = (
        confine(goal.output_dir, root, "output_dir")
        if goal.output_dir
        else Path(params["output_root"]) / episode_id
    )
    config = EpisodeConfig.from_ros_parameters(
        {
            **params,
            "policy": policy,
            "task": goal.task,
            "seed": int(goal.seed),
            "backend": backend,
            "output_dir": str(out_dir),
        }
    )
    return config.replace(
        budgets=BudgetConfig(
            max_requests=goal.max_requests or None,
            max_wall_s=goal.max_wall_time_s or None,
            max_physical_actions=goal.max_physical_actions or None,
        )
    )


def call_refusal(name: str, canceled: bool, lost: str | None) -> Result | None:
    """The refusal of a robot call once the goal was canceled or its robot lost (None: serve)."""
    if canceled:
        return Result.fail(
            FailureCategory.BUDGET_EXHAUSTED,
            f"{name}: the episode was canceled by the operator; nothing was "
            "executed. Stop issuing robot calls.",
        )
    if lost is not None:
        return Result.fail(
            FailureCategory.HARDWARE,
            f"{name}: {lost}; nothing was executed. "
            "The episode is ending: stop issuing robot calls.",
        )
    return None


def fill_result(
    res: Any, record: EpisodeRecord, failures: Any, bag: Any, lost: str | None, out_dir: Path
) -> None:
    """Set the goal's result ``res`` from the episode ``record``, its failures and its ``bag``
    (the recorder's path, completeness and status, also written into the folder's summary);
    ``lost``: why the episode ended early (the summary's ``error``)."""
    res.host_success, res.strict_success = record.host_success, record.strict_success
    res.requests, res.calls = record.requests, record.robot_calls
    res.physical_actions, res.wall_time_s = record.physical_actions, record.wall_s
    res.failures = failures
    res.bag_path, res.bag_complete, res.bag_status = bag.path, bag.complete, bag.status
    if bag.path:
        record = replace(
            record,
            bag_path=bag.path,
            bag_complete=bag.complete,
            extra={**record.extra, "bag_status": bag.status},
        )
        record.write(EpisodeFiles(out_dir).summary)
    res.summary_json = json.dumps(
        {**record.to_dict(), **({"error": lost} if lost else {})}, default=str
    )
