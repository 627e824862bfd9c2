"""Geometry of ``recover``: the way back along the last executed tool path."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from captain_ros.core.geometry import Pose
from captain_ros.motion import path


def reverse_path(
    history: Sequence[Pose], current: Pose, distance_m: float
) -> tuple[list[Pose], int, float]:
    """Walk back from ``current`` along ``history`` (oldest first) for up to ``distance_m`` [m].

    Returns ``(poses, cut, walked_m)``: the reversed poses starting at ``current`` (the last one
    interpolated to end exactly at ``distance_m``), the index of ``history`` the path is cut at
    (what remains of it after a successful recovery is ``history[:cut]``), and the length walked.
    """
    rev = [current]
    acc = 0.0
    cut = len(history) - 1
    for k in range(len(history) - 2, -1, -1):
        step = float(np.linalg.norm(history[k].position_m - rev[-1].position_m))
        if acc + step > distance_m:
            u = (distance_m - acc) / step if step > 0 else 0.0
            p = rev[-1].position_m + u * (history[k].position_m - rev[-1].position_m)
            rev.append(Pose(p, path.slerp(rev[-1].quat_wxyz, history[k].quat_wxyz, u)))
            return rev, k + 1, distance_m
        acc += step
        rev.append(history[k])
        cut = k
    return rev, cut, acc
