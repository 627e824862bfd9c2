"""Unit conversions between SI and the PiPER CAN protocol (piper_sdk 0.6.2 integer units).

- joint angles: 0.001 deg (``JointCtrl``, joint feedback 0x2A5-0x2A7);
- end pose: 0.001 mm and 0.001 deg, Euler ``Rz(rz) Ry(ry) Rx(rx)`` (end pose feedback 0x2A2-0x2A4,
  ``EndPoseCtrl``; the SDK's own FK uses the same convention);
- gripper stroke: 0.001 mm; gripper effort: 0.001 N m (``GripperCtrl`` 0-5000, feedback 0x2A8);
- motor current: 0.001 A; joint effort = current x 1.18125 (J1-J3) or 0.95844 (J4-J6) in 0.001 N m
  (the SDK's ``cal_effort``); motor speed: 0.001 rad/s; motor position: 0.001 rad (0x251-0x256).
"""

from __future__ import annotations

import math

import numpy as np

MDEG_PER_RAD = 180_000.0 / math.pi
UM_PER_M = 1_000_000.0
"""0.001 mm per metre."""
MNM_PER_NM = 1000.0
"""0.001 N m per N m."""
EFFORT_PER_CURRENT = (1.18125, 1.18125, 1.18125, 0.95844, 0.95844, 0.95844)
"""0.001 N m of joint effort per 0.001 A of motor current, J1..J6 (piper_sdk ``cal_effort``)."""
GRIPPER_EFFORT_MAX_MNM = 5000


def rad_to_mdeg(q_rad: np.ndarray) -> list[int]:
    """Joint angles [rad] -> integers in 0.001 deg (rounded)."""
    return [int(round(float(v) * MDEG_PER_RAD)) for v in np.asarray(q_rad, dtype=float)]


def mdeg_to_rad(q_mdeg: list[int] | np.ndarray) -> np.ndarray:
    """Integers in 0.001 deg -> joint angles [rad]."""
    return np.asarray(q_mdeg, dtype=float) / MDEG_PER_RAD


def m_to_um(x_m: float) -> int:
    """Length [m] -> integer in 0.001 mm."""
    return int(round(float(x_m) * UM_PER_M))


def um_to_m(x_um: int | float) -> float:
    """Integer in 0.001 mm -> length [m]."""
    return float(x_um) / UM_PER_M


def nm_to_mnm(effort_nm: float) -> int:
    """Torque [N m] -> integer in 0.001 N m."""
    return int(round(float(effort_nm) * MNM_PER_NM))


def mnm_to_nm(effort_mnm: int | float) -> float:
    """Integer in 0.001 N m -> torque [N m]."""
    return float(effort_mnm) / MNM_PER_NM


def current_to_effort_nm(current_ma: np.ndarray) -> np.ndarray:
    """Motor currents in 0.001 A (J1..J6) -> joint efforts [N m]."""
    return np.asarray(current_ma, dtype=float) * np.asarray(EFFORT_PER_CURRENT) / MNM_PER_NM


def effort_to_current_ma(effort_nm: np.ndarray) -> list[int]:
    """Joint efforts [N m] (J1..J6) -> motor currents in 0.001 A (what the drivers report)."""
    ma = np.asarray(effort_nm, dtype=float) * MNM_PER_NM / np.asarray(EFFORT_PER_CURRENT)
    return [int(round(v)) for v in ma]


def euler_zyx_to_matrix(rx_rad: float, ry_rad: float, rz_rad: float) -> np.ndarray:
    """Rotation ``Rz(rz) @ Ry(ry) @ Rx(rx)`` (the PiPER end-pose convention)."""
    cx, sx, cy, sy = math.cos(rx_rad), math.sin(rx_rad), math.cos(ry_rad), math.sin(ry_rad)
    cz, sz = math.cos(rz_rad), math.sin(rz_rad)
    return np.array(
        [
            [cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx],
            [sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx],
            [-sy, cy * sx, cy * cx],
        ]
    )


def matrix_to_euler_zyx(r: np.ndarray) -> tuple[float, float, float]:
    """Inverse of :func:`euler_zyx_to_matrix`: ``(rx, ry, rz)`` [rad]."""
    ry = math.atan2(-r[2, 0], math.hypot(r[0, 0], r[1, 0]))
    if abs(math.cos(ry)) < 1e-9:  # gimbal lock: put everything into rx
        return math.atan2(-r[1, 2], r[1, 1]), ry, 0.0
    return math.atan2(r[2, 1], r[2, 2]), ry, math.atan2(r[1, 0], r[0, 0])
