"""The AgileX PiPER's published kinematics and the frame math the description generator uses.

Kinematics come from AgileX's published modified-DH table (piper_sdk, ``dh_is_offset = 1``):
link frame ``i`` = frame ``i-1`` * RotX(alpha_i) * TransX(a_i) * RotZ(theta0_i + q_i) * TransZ(d_i).
Joint limits are the datasheet values (J1 +-154 deg, J2 0..195, J3 -175..0, J4 +-106, J5 +-75,
J6 +-100); reach ~626 mm to the flange; gripper stroke 0-70 mm (two fingers of 35 mm each).
The rig layout (arm bases, cameras, ready pose) is the project's own. ``scripts/generate_urdf.py``
writes the descriptions from these figures.
"""

from __future__ import annotations

import math

import numpy as np

# --- published kinematics ---------------------------------------------------------------------
DH_A_M = [0.0, 0.0, 0.28503, -0.02198, 0.0, 0.0]
DH_ALPHA_RAD = [0.0, -math.pi / 2, 0.0, math.pi / 2, -math.pi / 2, math.pi / 2]
DH_THETA0_RAD = [0.0, math.radians(-172.22), math.radians(-102.78), 0.0, 0.0, 0.0]
DH_D_M = [0.123, 0.0, 0.0, 0.25075, 0.0, 0.091]
LOWER_DEG = [-154.0, 0.0, -175.0, -106.0, -75.0, -100.0]
UPPER_DEG = [154.0, 195.0, 0.0, 106.0, 75.0, 100.0]
MAX_VEL_RAD_S = [3.14, 3.4, 3.14, 3.9, 3.9, 3.9]
EFFORT_NM = [40.0, 40.0, 30.0, 10.0, 10.0, 10.0]
KP = [300.0, 300.0, 250.0, 80.0, 80.0, 60.0]
FINGER_STROKE_M = 0.035
TCP_Z_M = 0.13  # tool point beyond the flange (link6 origin), centre of the pads
PAD_SIZE_M = (0.03, 0.02, 0.005)  # length (along z), width (along x), thickness (along y)
LINK_MASS_KG = [0.71, 1.02, 0.50, 0.38, 0.38, 0.45]
ARM_BASES = {
    "piper": {"": (0.0, 0.0)},
    "piper_dual": {"left_": (0.0, 0.25), "right_": (0.0, -0.25)},
}
# head RGB-D camera (position, look-at target) [m]. Dual rig: high, centred behind the two arms,
# as on the AgileX dual-arm rig. Single arm: on a stand at the far end of the table looking back
# at the robot, so the arm's ready pose never hides the objects in front of it.
HEAD_CAMERA_M = {
    "piper": ((0.80, 0.0, 0.90), (0.30, 0.0, 0.0)),
    "piper_dual": ((0.0, 0.0, 1.0), (0.42, 0.0, 0.0)),
}
HEAD_FOVY_DEG = 58.0
WRIST_FOVY_DEG = 70.0
WRIST_CAM_POS_M = (-0.055, 0.0, 0.05)  # in the link6 frame
WRIST_CAM_TARGET_M = (0.0, 0.0, 0.20)
HOME_Q_DEG = [
    0.0,
    80.0,
    -55.0,
    0.0,
    70.0,
    0.0,
]  # ready pose: tool pointing straight down at (0.23, 0, 0.11)


def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def dh_origin(i: int) -> np.ndarray:
    """4x4 origin of joint ``i`` (0-based) in its parent link frame (q = 0)."""
    t = np.eye(4)
    r = rot_x(DH_ALPHA_RAD[i]) @ rot_z(DH_THETA0_RAD[i])
    p = rot_x(DH_ALPHA_RAD[i]) @ np.array([DH_A_M[i], 0, 0]) + r @ np.array([0, 0, DH_D_M[i]])
    t[:3, :3] = r
    t[:3, 3] = p
    return t


def quat_of(r: np.ndarray) -> np.ndarray:
    w = math.sqrt(max(0.0, 1 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
    if w > 1e-6:
        q = np.array(
            [
                w,
                (r[2, 1] - r[1, 2]) / (4 * w),
                (r[0, 2] - r[2, 0]) / (4 * w),
                (r[1, 0] - r[0, 1]) / (4 * w),
            ]
        )
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        v = np.zeros(3)
        v[i] = math.sqrt(max(0.0, 1 + r[i, i] - r[j, j] - r[k, k])) / 2
        v[j] = (r[j, i] + r[i, j]) / (4 * v[i])
        v[k] = (r[k, i] + r[i, k]) / (4 * v[i])
        q = np.array([(r[k, j] - r[j, k]) / (4 * v[i]), *v])
    return q / np.linalg.norm(q)


def rpy_of(r: np.ndarray) -> tuple[float, float, float]:
    """URDF fixed-axis roll-pitch-yaw (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    pitch = math.asin(-max(-1.0, min(1.0, r[2, 0])))
    if abs(math.cos(pitch)) > 1e-9:
        roll = math.atan2(r[2, 1], r[2, 2])
        yaw = math.atan2(r[1, 0], r[0, 0])
    else:
        roll, yaw = math.atan2(-r[1, 2], r[1, 1]), 0.0
    return roll, pitch, yaw


def look_at_axes(
    pos: np.ndarray, target: np.ndarray, up: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo camera x (right) and y (up) axes for a camera at ``pos`` looking at ``target``."""
    f = target - pos
    f = f / np.linalg.norm(f)
    x = np.cross(f, up)
    x = x / np.linalg.norm(x)
    return x, np.cross(x, f)


def fmt(v: object) -> str:
    return " ".join(f"{float(x):.10g}" for x in np.asarray(v, dtype=float).reshape(-1))


def link_segments() -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Capsule (from, to, radius) per link 1..5 in that link's frame (link6 holds the gripper)."""
    nxt = [dh_origin(i + 1)[:3, 3] for i in range(5)]
    return [
        (np.array([0, 0, -0.06]), np.array([0, 0, 0.0]), 0.045),  # link1: turret
        (np.zeros(3), nxt[1], 0.038),  # link2: upper arm to elbow
        (np.zeros(3), nxt[2] * 0.82, 0.032),  # link3: forearm, stops short of the wrist
        (np.zeros(3), np.zeros(3), 0.030),  # link4: wrist roll housing (sphere)
        (np.zeros(3), nxt[4] * 0.55, 0.028),  # link5: wrist pitch toward the flange
    ]


def fk_tcp(q: np.ndarray) -> np.ndarray:
    """4x4 tool pose in the arm base frame (reference FK for checks)."""
    t = np.eye(4)
    for i in range(6):
        rz = np.eye(4)
        rz[:3, :3] = rot_z(q[i])
        t = t @ dh_origin(i) @ rz
    tool = np.eye(4)
    tool[2, 3] = TCP_Z_M
    return t @ tool


def frame_with_z(z: np.ndarray) -> np.ndarray:
    x = np.cross([0.0, 0.0, 1.0], z)
    x = x / np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])
