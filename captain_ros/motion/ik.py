"""Damped-least-squares inverse kinematics over any :class:`~captain_ros.backends.base.Kinematics`.

Error of a pose target in the world frame: ``[p* - p; w]`` with ``w`` the rotation vector of
``R* R^T`` [rad]; step ``dq = J^T (J J^T + lambda^2 I)^-1 e`` with the world Jacobian, joint limits
enforced by clipping after each step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from captain_ros.backends.base import Kinematics
from captain_ros.core.geometry import Pose

POS_TOL_M = 1e-3
ROT_TOL_RAD = 1e-2
DAMPING = 1e-2
MAX_STEP_RAD = 0.4


@dataclass(frozen=True)
class IKResult:
    """Outcome of one solve: joint positions [rad], residuals [m]/[rad], convergence flag."""

    q: np.ndarray
    position_error_m: float
    rotation_error_rad: float
    converged: bool
    iterations: int


def rotation_vector(r: np.ndarray) -> np.ndarray:
    """Axis * angle [rad] of a rotation matrix (robust near 0 and pi)."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = np.asarray(r).tolist()
    cos = min(1.0, max(-1.0, (r00 + r11 + r22 - 1.0) / 2.0))
    angle = math.acos(cos)
    vx, vy, vz = r21 - r12, r02 - r20, r10 - r01
    if angle < 1e-9:
        return np.array([0.5 * vx, 0.5 * vy, 0.5 * vz])
    if math.pi - angle < 1e-4:
        d = np.sqrt(np.maximum((np.diag(r) + 1.0) / 2.0, 0.0))
        k = int(np.argmax(d))
        axis = np.asarray(r)[:, k] + np.eye(3)[k]
        return angle * axis / np.linalg.norm(axis)
    s = angle / (2.0 * math.sin(angle))
    return np.array([s * vx, s * vy, s * vz])


def tool_matrix(kin: Kinematics, q: np.ndarray) -> np.ndarray:
    """4x4 tool pose; uses the backend's ``fk_matrix`` fast path when it has one."""
    fast = getattr(kin, "fk_matrix", None)
    if fast is not None:
        return np.asarray(fast(q))
    return kin.fk(q).matrix()


def pose_error(kin: Kinematics, q: np.ndarray, target: Pose) -> np.ndarray:
    """(6,) world-frame error ``[dp; w]`` of the tool at ``q`` toward ``target``."""
    return _error(tool_matrix(kin, q), target.position_m, target.rotation())


def _error(t: np.ndarray, p_goal: np.ndarray, r_goal: np.ndarray) -> np.ndarray:
    return np.concatenate([p_goal - t[:3, 3], rotation_vector(r_goal @ t[:3, :3].T)])


def _norms(e: np.ndarray) -> tuple[float, float]:
    ex, ey, ez, wx, wy, wz = e.tolist()
    return math.sqrt(ex * ex + ey * ey + ez * ez), math.sqrt(wx * wx + wy * wy + wz * wz)


def solve(
    kin: Kinematics,
    target: Pose,
    q0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    max_iters: int = 100,
    position_only: bool = False,
    pos_tol_m: float = POS_TOL_M,
    rot_tol_rad: float = ROT_TOL_RAD,
) -> IKResult:
    """DLS iterations from ``q0`` until the residual is below ``pos_tol_m`` / ``rot_tol_rad``
    (default 1 mm / 0.01 rad)."""
    q = np.minimum(np.maximum(np.asarray(q0, dtype=float), lower), upper)
    p_goal, r_goal = target.position_m, target.rotation()
    e = _error(tool_matrix(kin, q), p_goal, r_goal)
    pe, re = _norms(e)
    it = 0
    damping = DAMPING**2 * np.eye(3 if position_only else 6)
    for it in range(1, max_iters + 1):  # noqa: B007 - reported
        if pe < pos_tol_m and (position_only or re < rot_tol_rad):
            it -= 1
            break
        jac = kin.jacobian(q)
        if position_only:
            jac, err = jac[:3], e[:3]
        else:
            err = e
        dq = jac.T @ np.linalg.solve(jac @ jac.T + damping, err)
        n = float(np.max(np.abs(dq)))
        if n > MAX_STEP_RAD:
            dq *= MAX_STEP_RAD / n
        q = np.minimum(np.maximum(q + dq, lower), upper)
        e = _error(tool_matrix(kin, q), p_goal, r_goal)
        pe, re = _norms(e)
    ok = pe < pos_tol_m and (position_only or re < rot_tol_rad)
    return IKResult(q, pe, re, ok, it)
