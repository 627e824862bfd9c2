"""How the policy node answers a ``RunEpisode`` goal, without ROS.

A goal ends in one of two ways:

- refused (:class:`Refusal`, :func:`refuse`): the goal is aborted with an outcome label and an
  error before its episode ran (a bad credential, a latched e-stop, a robot node that is not
  ready, a bad goal, a scene that did not load) or when the harness itself failed;
- answered with its episode (:func:`fill_result`, :func:`outcome_label`, :func:`settle`): the
  result carries the record's counts and bag, and the goal ends canceled (the operator canceled),
  aborted (the episode was lost: its robot process died, the node shut down) or succeeded.

The goal handle and the result are read and set by attribute (``abort()``, ``canceled()``,
``succeed()``, ``is_cancel_requested``; ``outcome_label``, ``summary_json``, ...), so plain objects
stand in for rclpy's in tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.harness.record.episode_record import EpisodeRecord


@dataclass(frozen=True)
class Refusal:
    """Why a goal ends without its episode's result: ``label`` is the result's outcome label
    (``captain up`` lists those of a refused goal in :data:`captain_ros.ros.up.REFUSED`),
    ``error`` the result summary's ``error``."""

    label: str
    error: str


NO_BACKEND = Refusal(
    "robot_not_ready",
    "the robot node did not say which backend it runs (its backend parameter); "
    "nothing was executed",
)
"""The robot node's ``backend`` parameter is unknown (a goal's task names are the backend's:
robosuite's ``lift``)."""

GATE_NOT_OPENED = Refusal(
    "robot_not_ready",
    "the robot node did not accept the episode (its active_episode parameter); "
    "nothing was executed",
)
"""The robot node did not open its episode gate for the goal."""


def unauthenticated(why: str) -> Refusal:
    """The secured graph's goal credential did not check out (``why``)."""
    return Refusal("unauthenticated", f"goal refused: {why}; nothing was executed")


def estop_latched(reset_srv: str) -> Refusal:
    """The e-stop is latched: only an operator's call of ``reset_srv`` releases it."""
    return Refusal(
        "estop",
        f"the e-stop is latched: an operator must release it with {reset_srv} before a new episode",
    )


def no_heartbeat(wait_s: float) -> Refusal:
    """The robot node answered, but its heartbeat was not heard within ``wait_s`` [s]."""
    return Refusal(
        "robot_not_ready",
        "the robot node answered but its heartbeat (/captain/alive/robot) was not heard within "
        f"{wait_s:g} s; nothing was executed",
    )


def refuse(goal_handle: Any, res: Any, refusal: Refusal, warn: Callable[[str], object]) -> Any:
    """Abort ``goal_handle`` with ``refusal`` set on its result ``res`` (returned); ``warn``
    logs why."""
    warn(f"goal aborted ({refusal.label}): {refusal.error}")
    res.outcome_label, res.summary_json = refusal.label, json.dumps({"error": refusal.error})
    goal_handle.abort()
    return res


def outcome_label(canceled: bool, lost: str | None, stop_label: str, outcome: str) -> str:
    """The result's outcome label of an episode that ran: ``canceled`` once the operator canceled
    it, ``stop_label`` (``robot_lost``, ``node_shutdown``) once it was ``lost``, else the
    record's ``outcome``."""
    if canceled:
        return "canceled"
    return stop_label if lost else outcome


def settle(
    goal_handle: Any, episode_id: str, lost: str | None, error: Callable[[str], object]
) -> None:
    """End the goal of the episode ``episode_id``, which ran: canceled when the operator asked
    for it, aborted when the episode was ``lost`` (``error`` logs why), else succeeded."""
    if goal_handle.is_cancel_requested:
        goal_handle.canceled()
    elif lost:
        error(f"episode {episode_id} ended early: {lost}")
        goal_handle.abort()
    else:
        goal_handle.succeed()


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
