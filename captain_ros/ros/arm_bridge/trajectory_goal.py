"""A ``FollowJointTrajectory`` goal as the simulated driver checks and runs it (no rclpy).

:meth:`TrajectoryGoal.from_msg` reads a ``trajectory_msgs/JointTrajectory`` (any object with its
fields). :meth:`TrajectoryGoal.problem` validates it like a ros2_control driver does: the arm's
joint names in any order, one finite position per joint within the joint limits (1 mm/mrad of
slack) at every point, non-decreasing ``time_from_start`` and a last point after the start.
:meth:`TrajectoryGoal.ordered` gives the points in the driver's joint order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LIMIT_SLACK = 1e-3
"""How far past a joint limit a point may be [rad or m] (rounding of a client at the limit)."""


def duration_s(d: Any) -> float:
    """A ``builtin_interfaces/Duration`` in seconds."""
    return d.sec + d.nanosec * 1e-9


@dataclass(frozen=True)
class TrajectoryGoal:
    """Joint names, each point's time from start [s] and positions (as sent: any length)."""

    joint_names: tuple[str, ...]
    times_s: tuple[float, ...]
    positions: tuple[tuple[float, ...], ...]

    @classmethod
    def from_msg(cls, traj: Any) -> TrajectoryGoal:
        return cls(
            tuple(traj.joint_names),
            tuple(duration_s(p.time_from_start) for p in traj.points),
            tuple(tuple(float(v) for v in p.positions) for p in traj.points),
        )

    def problem(self, joints: Sequence[str], lower: np.ndarray, upper: np.ndarray) -> str:
        """Why a driver of ``joints`` (limits ``lower``/``upper``, in that order) rejects this
        goal; ``""`` when it is valid. The limits apply joint by joint whatever the goal's order
        (the positions in the reason are as sent)."""
        if sorted(self.joint_names) != sorted(joints):
            return f"joints {list(self.joint_names)} are not {list(joints)}"
        if not self.times_s:
            return "no points"
        order = [self.joint_names.index(j) for j in joints]
        t_prev = 0.0
        for t, positions in zip(self.times_s, self.positions, strict=True):
            q = np.asarray(positions, dtype=float)
            if q.shape != (len(joints),) or not np.all(np.isfinite(q)):
                return "each point needs one finite position per joint"
            if np.any(q[order] < lower - LIMIT_SLACK) or np.any(q[order] > upper + LIMIT_SLACK):
                return f"positions {np.round(q, 3).tolist()} outside the joint limits"
            if t < t_prev:
                return "time_from_start must not decrease"
            t_prev = t
        return "" if t_prev > 0 else "the last point needs time_from_start > 0"

    def ordered(self, joints: Sequence[str]) -> np.ndarray:
        """The points (k, n) with their positions in the order of ``joints`` (a valid goal)."""
        order = [self.joint_names.index(j) for j in joints]
        return np.array([[p[i] for i in order] for p in self.positions])
