"""The policy node's goal bookkeeping, without ROS (:class:`GoalSlot`).

One goal runs at a time (another is rejected while :attr:`GoalSlot.busy` is held). While its
episode runs the slot knows the goal and the robot process the episode started with, and says
why the episode cannot go on: that robot process died or a respawn replaced it, or this node is
shutting down (:meth:`GoalSlot.stop`). Robot calls of a goal that was canceled or lost are
refused with nothing executed (:meth:`GoalSlot.call_refusal`), and the episode stops at its next
request boundary (:meth:`GoalSlot.stop_reason`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from captain_ros.core.result import FailureCategory, Result

SHUTTING_DOWN = "the policy node is shutting down"


class GoalSlot:
    """``lost_since(instance)``: why the robot process ``instance`` is no longer the live one,
    None while it is (:meth:`captain_ros.ros.liveness.Liveness.lost_since`)."""

    def __init__(self, lost_since: Callable[[str], str | None]) -> None:
        self.lost_since = lost_since
        self.busy = threading.Lock()  # held while a goal runs
        self.stopping = threading.Event()  # set by stop(): this process is shutting down
        self.goal: Any = None  # the goal handle whose episode runs (None between episodes)
        self.robot_instance = ""  # the robot process the running episode started with

    def open(self, goal: Any, robot_instance: str) -> None:
        """The episode of ``goal`` starts with the robot process ``robot_instance``."""
        self.goal, self.robot_instance = goal, robot_instance

    def close(self, lost: str | None, robot_alive: bool) -> bool:
        """The episode ended (``lost``: why early); True when the robot's episode gate is to be
        closed now: always after a whole episode, after a lost one only while a robot process is
        alive (a dead one has no gate) and this node is not shutting down."""
        self.goal = None
        return lost is None or (robot_alive and not self.stopping.is_set())

    def stop(self) -> None:
        """This process is shutting down: the running episode is lost at once."""
        self.stopping.set()

    def lost(self) -> str | None:
        """Why the running episode cannot go on; None while it can (and between episodes,
        unless the node is shutting down)."""
        if self.stopping.is_set():
            return SHUTTING_DOWN
        if self.goal is None:
            return None
        return self.lost_since(self.robot_instance)

    def stop_label(self) -> str:
        """The outcome label of a lost episode."""
        return "node_shutdown" if self.stopping.is_set() else "robot_lost"

    def stop_reason(self) -> str | None:
        """Why the episode stops before its next request (:meth:`stop_label`); None: go on."""
        return self.stop_label() if self.lost() else None

    def call_refusal(self, name: str, kwargs: dict[str, Any]) -> Result | None:
        """The refusal of the robot call ``name`` once the goal was canceled or its episode lost
        (None: serve it)."""
        if self.goal is not None and self.goal.is_cancel_requested:
            return Result.fail(
                FailureCategory.BUDGET_EXHAUSTED,
                f"{name}: the episode was canceled by the operator; nothing was "
                "executed. Stop issuing robot calls.",
            )
        lost = self.lost()
        if lost is not None:
            return Result.fail(
                FailureCategory.HARDWARE,
                f"{name}: {lost}; nothing was executed. "
                "The episode is ending: stop issuing robot calls.",
            )
        return None
