"""Straight Cartesian sweeps: position lerp + quaternion slerp sampled at the control tick."""

from __future__ import annotations

import math

import numpy as np

from captain_ros.core.geometry import Pose

CONTROL_DT_S = 0.02
MAX_SPEED_M_S = 0.5
ANGULAR_SPEED_RAD_S = 0.8
MAX_SWEEP_S = 120.0
"""Longest sweep [s] that a speed may ask for (twice the longest ``move_to(duration_s=...)``; a
10 cm approach at 1 mm/s fits): a slower one is refused before any per-tick work, which is
proportional to its duration."""
MAX_STRETCHED_SWEEP_S = 2 * MAX_SWEEP_S
"""Longest sweep [s] after stretching for the joint velocity limits."""


def slerp(q0: np.ndarray, q1: np.ndarray, s: float) -> np.ndarray:
    """Spherical interpolation of (w, x, y, z) unit quaternions, ``s`` in [0, 1]."""
    dot = float(np.dot(q0, q1))
    if dot < 0.0:
        q1, dot = -q1, -dot
    if dot > 0.9995:
        q = q0 + s * (q1 - q0)
        return q / np.linalg.norm(q)
    theta = math.acos(min(1.0, dot))
    return (math.sin((1 - s) * theta) * q0 + math.sin(s * theta) * q1) / math.sin(theta)


def angle_between(q0: np.ndarray, q1: np.ndarray) -> float:
    """Rotation angle [rad] between two unit quaternions."""
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(q0, q1)))))


def sweep_duration_s(start: Pose, goal: Pose, speed_m_s: float) -> float:
    """Time [s] of a sweep at ``speed_m_s`` (and at most 0.8 rad/s of tool rotation)."""
    dist = float(np.linalg.norm(goal.position_m - start.position_m))
    ang = angle_between(start.quat_wxyz, goal.quat_wxyz)
    return max(dist / speed_m_s, ang / ANGULAR_SPEED_RAD_S, CONTROL_DT_S)


def _pose(p: np.ndarray, q: np.ndarray) -> Pose:
    """A Pose from already-validated values (hot path: one per control tick)."""
    return Pose.trusted(p, q)


def sweep(start: Pose, goal: Pose, duration_s: float, dt_s: float = CONTROL_DT_S) -> list[Pose]:
    """Tool poses at every control tick of a straight sweep (the last one is ``goal``)."""
    n = max(1, int(math.ceil(duration_s / dt_s - 1e-9)))
    out = []
    for k in range(1, n + 1):
        s = k / n
        p = start.position_m + s * (goal.position_m - start.position_m)
        out.append(goal if k == n else _pose(p, slerp(start.quat_wxyz, goal.quat_wxyz, s)))
    return out


def polyline(poses: list[Pose], speed_m_s: float, dt_s: float = CONTROL_DT_S) -> list[Pose]:
    """Resample a piecewise-linear tool path by arc length at ``speed_m_s`` (used by recover)."""
    if len(poses) < 2:
        return list(poses[-1:])
    seg = [
        float(np.linalg.norm(b.position_m - a.position_m))
        for a, b in zip(poses[:-1], poses[1:], strict=True)
    ]
    total = sum(seg)
    n = max(1, int(math.ceil(total / (speed_m_s * dt_s) - 1e-9)))
    out: list[Pose] = []
    i, acc = 0, 0.0
    for k in range(1, n + 1):
        s = total * k / n
        while i < len(seg) - 1 and acc + seg[i] < s:
            acc += seg[i]
            i += 1
        u = 1.0 if seg[i] <= 1e-12 else min(1.0, (s - acc) / seg[i])
        a, b = poses[i], poses[i + 1]
        out.append(
            Pose(
                a.position_m + u * (b.position_m - a.position_m), slerp(a.quat_wxyz, b.quat_wxyz, u)
            )
        )
    return out


def path_length_m(poses: list[Pose]) -> float:
    return float(
        sum(
            np.linalg.norm(b.position_m - a.position_m)
            for a, b in zip(poses[:-1], poses[1:], strict=True)
        )
    )
