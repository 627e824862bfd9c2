"""When a gripper command is done (no rclpy).

A ``GripperCommand`` goal (:mod:`captain_ros.ros.arm_bridge.gripper_server`) succeeds when the jaw
reaches the commanded gap (within :data:`REACHED_M`), or stalls on an object (no motion over
:data:`MOVING_M` for :data:`STALL_S`), or after :data:`TIMEOUT_S`.
"""

from __future__ import annotations

from dataclasses import dataclass

REACHED_M = 1e-3
"""The jaw is at the commanded gap within this [m]."""
MOVING_M = 2e-4
"""A change of the gap over this [m] is motion (below it: still)."""
STALL_S = 0.2
"""Still this long [s] short of the goal: stalled (an object between the fingers)."""
TIMEOUT_S = 5.0
"""A command is done after this long [s] whatever the gap."""


@dataclass(frozen=True)
class GripProgress:
    """The jaw gap [m] now, and whether it reached the goal, stalled or ran out of time."""

    position_m: float
    reached: bool
    stalled: bool
    timed_out: bool

    @property
    def done(self) -> bool:
        return self.reached or self.stalled or self.timed_out


class GripWatch:
    """The progress of one command to the gap ``target_m``, started at ``now_s`` with the jaw at
    ``opening_m``."""

    def __init__(self, target_m: float, opening_m: float, now_s: float) -> None:
        self.target_m = float(target_m)
        self.started_s = now_s
        self._last_m = opening_m
        self._still_since_s = now_s

    def update(self, opening_m: float, now_s: float) -> GripProgress:
        """The progress with the jaw at ``opening_m`` at ``now_s`` [s]."""
        if abs(opening_m - self._last_m) > MOVING_M:
            self._still_since_s, self._last_m = now_s, opening_m
        reached = abs(opening_m - self.target_m) < REACHED_M
        stalled = not reached and now_s - self._still_since_s > STALL_S
        return GripProgress(opening_m, reached, stalled, now_s - self.started_s > TIMEOUT_S)
