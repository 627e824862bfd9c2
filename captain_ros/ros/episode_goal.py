"""A ``RunEpisode`` goal as an :class:`~captain_ros.evaluation.config.EpisodeConfig` (no rclpy: the
goal is read by attribute, so plain objects stand in for the message in tests; its answer is
:mod:`captain_ros.ros.goal_answer`).

The goal's empty fields are the policy node's parameters (its ``policy``, ``output_root``) and
zero budgets are the defaults; a goal's ``output_dir`` and ``replay:FILE`` must lie under the
node's ``allowed_root`` (:func:`~captain_ros.ros.access.confine`). The task, seed and budgets are
validated by the config, once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from captain_ros.evaluation.config import BudgetConfig, EpisodeConfig
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
