"""Kinematics of the fake rig's Cartesian "arms" (q = tool pose) and their pad geometry.

Each arm's "joints" are the tool pose itself, ``q = [x, y, z, roll, pitch, yaw]`` (metres, radians;
``R = Rz(yaw) Ry(pitch) Rx(roll)``), so forward kinematics and the Jacobian are analytic. The tool
frame has its z axis along the approach direction and the jaw along its y axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from captain_ros.backends.fake.scene import rpy_matrix
from captain_ros.core.geometry import Pose, matrix_to_quat

JOINT_NAMES = ("x", "y", "z", "roll", "pitch", "yaw")
JAW_MAX_M = 0.07
PAD_SIZE_M = (0.03, 0.02, 0.005)  # length (along approach), width, thickness [m]
HOME_Q = np.array([0.23, 0.0, 0.12, math.pi, 0.0, math.pi])
"""Tool down at (0.23, 0, 0.12) m from the base, quaternion (0, 0, 1, 0), like the MuJoCo rig."""


def tool(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tool position [m] and rotation matrix of joint vector ``q``."""
    return np.asarray(q[:3], dtype=float), rpy_matrix(*q[3:6])


def pad_points(q: np.ndarray, jaw_m: float) -> np.ndarray:
    """(5, 3) points [m]: both ends of each pad at jaw opening ``jaw_m`` and the palm."""
    p, r = tool(q)
    half_len = PAD_SIZE_M[0] / 2
    off = jaw_m / 2 + PAD_SIZE_M[2] / 2
    pts = [p + r @ np.array([0.0, s * off, a * half_len]) for s in (-1, 1) for a in (-1, 1)]
    pts.append(p + r @ np.array([0.0, 0.0, -(half_len + 0.01)]))  # palm
    return np.array(pts)


class FakeKinematics:
    """Analytic kinematics of one Cartesian "arm" (q = tool pose).

    ``collisions`` is the rig's own check (table and arm-arm proximity), injected by the backend."""

    def __init__(self, collisions: Callable[[dict[str, np.ndarray]], list[str]]) -> None:
        self._collisions = collisions
        self.joint_names: tuple[str, ...] = JOINT_NAMES

    def fk(self, q: np.ndarray) -> Pose:
        q = np.asarray(q, dtype=float)
        return Pose(q[:3], matrix_to_quat(rpy_matrix(*q[3:6])))

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        roll, pitch, yaw = np.asarray(q, dtype=float)[3:6]
        jac = np.zeros((6, 6))
        jac[:3, :3] = np.eye(3)
        rz = rpy_matrix(0.0, 0.0, yaw)
        ry = rpy_matrix(0.0, pitch, 0.0)
        jac[3:, 3] = rz @ ry @ np.array([1.0, 0.0, 0.0])
        jac[3:, 4] = rz @ np.array([0.0, 1.0, 0.0])
        jac[3:, 5] = np.array([0.0, 0.0, 1.0])
        return jac

    def collisions(self, q_by_arm: Mapping[str, np.ndarray]) -> list[str]:
        return self._collisions(dict(q_by_arm))
