"""A box model of the parallel gripper in the tool (TCP) frame, used to tell robot pixels from
object pixels and to check pad contact.

Tool-frame convention (shared with :mod:`captain_ros.motion`): the TCP lies between the pads,
tool **z** is the approach direction (out of the gripper, toward the object), tool **y** is the
jaw axis along which the pads close, tool **x** completes a right-handed frame. Pads are centred
on the TCP along z.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core.geometry import quat_to_matrix

JAW_AXIS = 1
APPROACH_AXIS = 2
WRIST_LENGTH_M = 0.12
"""Length of the gripper body behind the pads (tool -z) counted as robot [m]."""


def to_tool(points_m: np.ndarray, tcp_position_m: Any, tcp_quat_wxyz: Any) -> np.ndarray:
    """World points (N, 3) expressed in the tool frame."""
    r = quat_to_matrix(np.asarray(tcp_quat_wxyz, dtype=float))
    return (np.asarray(points_m, dtype=float).reshape(-1, 3) - np.asarray(tcp_position_m)) @ r


def gripper_points_mask(
    local: np.ndarray, opening_m: float, pad_size_m: tuple[float, float, float]
) -> np.ndarray:
    """Tool-frame points (N, 3) on the gripper itself (pads, fingers, body), not between the pads."""
    length, width, thick = pad_size_m
    x, y, z = local[:, 0], local[:, JAW_AXIS], local[:, APPROACH_AXIS]
    half = opening_m / 2
    near = (np.abs(x) < width / 2 + 0.02) & (np.abs(y) < half + thick + 0.03)
    pads = (
        near
        & (np.abs(y) > half - 0.002)
        & (z > -length / 2 - WRIST_LENGTH_M)
        & (z < length / 2 + 0.01)
    )
    body = near & (z < -length / 2 - 0.005) & (z > -length / 2 - WRIST_LENGTH_M)
    return pads | body


def robot_point_filter(
    backend: Backend, robot: dict[str, Any]
) -> Callable[[np.ndarray], np.ndarray]:
    """``f(points (N, 3)) -> (N,) bool``: which world points lie on a gripper of the rig,
    using the TCP poses and jaw openings in an observation's robot summary."""
    arms = []
    for spec in backend.spec.arms:
        st = robot.get("arms", {}).get(spec.name)
        if st is None:
            continue
        arms.append(
            (
                st["end_effector_position_m"],
                st["end_effector_quat_wxyz"],
                float(st["jaw_opening_m"]),
                spec.pad_size_m,
            )
        )

    def f(points_m: np.ndarray) -> np.ndarray:
        pts = np.asarray(points_m, dtype=float).reshape(-1, 3)
        out = np.zeros(len(pts), dtype=bool)
        for pos, quat, opening, pad in arms:
            out |= gripper_points_mask(to_tool(pts, pos, quat), opening, pad)
        return out

    return f
