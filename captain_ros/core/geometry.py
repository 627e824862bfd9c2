"""Poses and quaternions.

Convention (stated in TASK.md too): positions in metres in the ``world`` frame (x forward from
the robot base toward the table centre, y left, z up; REP 103), quaternions as ``(w, x, y, z)``
unit quaternions (MuJoCo's order). ROS messages use ``(x, y, z, w)``; the ROS layer converts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError

_QUAT_NORM_TOL = 1e-3


def as_vector(value: Any, size: int, name: str) -> np.ndarray:
    """Validate a finite float vector of ``size`` elements, raising InvalidArgumentError."""
    try:
        arr = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{name} must be {size} numbers, got {value!r}") from exc
    if arr.size != size:
        raise InvalidArgumentError(f"{name} must have {size} numbers, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise InvalidArgumentError(f"{name} contains NaN or infinity: {arr.tolist()}")
    return arr


def normalize_quat(value: Any, name: str = "quat_wxyz") -> np.ndarray:
    """Validate a (w, x, y, z) quaternion; accept near-unit ones (|q| within 1e-3) and normalise."""
    q = as_vector(value, 4, name)
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > _QUAT_NORM_TOL:
        raise InvalidArgumentError(
            f"{name} must be a unit quaternion (w, x, y, z); its norm is {norm:.4f}"
        )
    q = q / norm
    return q if q[0] >= 0 else -q


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` of (w, x, y, z) quaternions."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix (3x3) of a unit (w, x, y, z) quaternion."""
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit (w, x, y, z) quaternion of a rotation matrix, with w >= 0."""
    m = np.asarray(m, dtype=float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = np.sqrt(tr + 1.0) * 2
        q = np.array(
            [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
        )
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = np.array(
            [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
        )
    elif m[1, 1] > m[2, 2]:
        s = np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = np.array(
            [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
        )
    else:
        s = np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = np.array(
            [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
        )
    q = q / np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def yaw_of_quat(q: np.ndarray) -> float:
    """Yaw angle [rad] about world z of a (w, x, y, z) quaternion."""
    w, x, y, z = q
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


@dataclass(frozen=True)
class Pose:
    """A rigid pose: ``position_m`` (3,) in metres and ``quat_wxyz`` (4,) unit quaternion.

    Construction validates: finite values, 3 + 4 numbers, a unit quaternion (normalised, w >= 0).
    """

    position_m: np.ndarray
    quat_wxyz: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    frame: str = "world"

    def __post_init__(self) -> None:
        object.__setattr__(self, "position_m", as_vector(self.position_m, 3, "position_m"))
        object.__setattr__(self, "quat_wxyz", normalize_quat(self.quat_wxyz))
        self.position_m.setflags(write=False)
        self.quat_wxyz.setflags(write=False)

    @classmethod
    def trusted(cls, position_m: np.ndarray, quat_wxyz: np.ndarray, frame: str = "world") -> Pose:
        """A Pose from finite values computed inside the stack, skipping validation (hot paths:
        one per control tick). The quaternion is normalised and given w >= 0; arrays are taken
        over (not copied) and made read-only. Never use it on untrusted input."""
        q = np.asarray(quat_wxyz, dtype=float)
        q = q / np.sqrt(float(q @ q))
        if q[0] < 0:
            q = -q
        p = np.asarray(position_m, dtype=float)
        p.setflags(write=False)
        q.setflags(write=False)
        pose = object.__new__(cls)
        object.__setattr__(pose, "position_m", p)
        object.__setattr__(pose, "quat_wxyz", q)
        object.__setattr__(pose, "frame", frame)
        return pose

    @classmethod
    def from_matrix(cls, t: np.ndarray, frame: str = "world") -> Pose:
        t = np.asarray(t, dtype=float)
        return cls(t[:3, 3], matrix_to_quat(t[:3, :3]), frame)

    def matrix(self) -> np.ndarray:
        """Homogeneous 4x4 transform."""
        t = np.eye(4)
        t[:3, :3] = quat_to_matrix(self.quat_wxyz)
        t[:3, 3] = self.position_m
        return t

    def rotation(self) -> np.ndarray:
        return quat_to_matrix(self.quat_wxyz)

    def compose(self, other: Pose) -> Pose:
        """``self * other`` (other expressed in self's frame)."""
        return Pose.from_matrix(self.matrix() @ other.matrix(), self.frame)

    def inverse(self) -> Pose:
        r = self.rotation().T
        return Pose(-r @ self.position_m, matrix_to_quat(r), self.frame)

    def to_dict(self) -> dict[str, Any]:
        return {
            "position_m": [float(v) for v in self.position_m],
            "quat_wxyz": [float(v) for v in self.quat_wxyz],
            "frame": self.frame,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Pose):
            return NotImplemented
        return (
            self.frame == other.frame
            and np.array_equal(self.position_m, other.position_m)
            and np.array_equal(self.quat_wxyz, other.quat_wxyz)
        )

    def __hash__(self) -> int:
        return hash((self.frame, self.position_m.tobytes(), self.quat_wxyz.tobytes()))
