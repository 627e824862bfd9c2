"""Generate the AgileX PiPER descriptions (URDF + MJCF, single arm and dual rig) in this folder.

Run ``python captain_ros/data/urdf/generate.py`` after changing a parameter; the generated files are committed.

Kinematics come from AgileX's published modified-DH table (piper_sdk, ``dh_is_offset = 1``):
link frame ``i`` = frame ``i-1`` * RotX(alpha_i) * TransX(a_i) * RotZ(theta0_i + q_i) * TransZ(d_i).
Joint limits are the datasheet values (J1 +-154 deg, J2 0..195, J3 -175..0, J4 +-106, J5 +-75,
J6 +-100); reach ~626 mm to the flange; gripper stroke 0-70 mm (two fingers of 35 mm each).
Geometry is primitive (capsules/boxes); no vendor meshes are used.

Tool frame (site ``tcp``, between the pad centres): z = approach direction (out of the flange),
y = finger closing axis (the ``*_finger_left`` finger opens along +y). A top-down grasp with the
fingers closing along world y is the quaternion (w, x, y, z) = (0, 0, 1, 0)
(tool x = -world x, the wrist camera sits on the tool -x side, toward the robot).

World frame (REP 103): x forward from the robot toward the table centre, y left, z up; the table
top is the plane z = 0. The single arm's base sits at the origin on the table's rear edge; the dual
rig puts "left" at y = +0.25 m and "right" at y = -0.25 m, both facing +x.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

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


# --- MJCF -------------------------------------------------------------------------------------
def mjcf_arm(p: str, base_xy: tuple[float, float], indent: str) -> str:
    """The arm bodies (``p`` = name prefix) as an MJCF fragment for ``<worldbody>``."""
    out: list[str] = []
    ind = indent
    out.append(f'{ind}<body name="{p}base_link" pos="{base_xy[0]} {base_xy[1]} 0">')
    out.append(
        f'{ind}  <geom class="robot" type="cylinder" size="0.055 0.03" pos="0 0 0.03" material="dark"/>'
    )
    segs = link_segments()
    for i in range(6):
        ind += "  "
        t = dh_origin(i)
        out.append(
            f'{ind}<body name="{p}link{i + 1}" pos="{fmt(t[:3, 3])}" quat="{fmt(quat_of(t[:3, :3]))}" gravcomp="1">'
        )
        out.append(
            f'{ind}  <inertial pos="0 0 0" mass="{LINK_MASS_KG[i]}" diaginertia="0.002 0.002 0.002"/>'
        )
        out.append(
            f'{ind}  <joint name="{p}joint{i + 1}" class="arm" range="{math.radians(LOWER_DEG[i]):.6f} {math.radians(UPPER_DEG[i]):.6f}"/>'
        )
        if i < 5:
            a, b, r = segs[i]
            if np.allclose(a, b):
                out.append(
                    f'{ind}  <geom class="robot" type="sphere" size="{r}" material="{"grey" if i % 2 else "white"}"/>'
                )
            else:
                out.append(
                    f'{ind}  <geom class="robot" type="capsule" size="{r}" fromto="{fmt(a)} {fmt(b)}" material="{"grey" if i % 2 else "white"}"/>'
                )
    # gripper on link6 (flange at the link6 origin, z out of the flange)
    g = ind + "  "
    px, py, pz = PAD_SIZE_M[1] / 2, PAD_SIZE_M[2] / 2, PAD_SIZE_M[0] / 2
    out += [
        f'{g}<geom name="{p}gripper_housing" class="robot" type="box" size="0.025 0.048 0.04" pos="0 0 0.04" material="dark"/>',
        f'{g}<site name="{p}tcp" pos="0 0 {TCP_Z_M}" size="0.005" rgba="1 0 0 0.5" group="4"/>',
    ]
    wx, wy = look_at_axes(
        np.array(WRIST_CAM_POS_M), np.array(WRIST_CAM_TARGET_M), np.array([-1.0, 0, 0])
    )
    out.append(
        f'{g}<camera name="{p}wrist" pos="{fmt(WRIST_CAM_POS_M)}" xyaxes="{fmt(wx)} {fmt(wy)}" fovy="{WRIST_FOVY_DEG}"/>'
    )
    out.append(
        f'{g}<geom class="robot" type="box" size="0.012 0.012 0.012" pos="{fmt(np.array(WRIST_CAM_POS_M) + [0.0, 0.0, -0.012])}" material="dark"/>'
    )
    for side, sign in (("left", 1), ("right", -1)):
        out += [
            f'{g}<body name="{p}finger_{side}" pos="0 0 0" gravcomp="1">',
            f'{g}  <inertial pos="0 {sign * 0.01} 0.11" mass="0.03" diaginertia="1e-5 1e-5 1e-5"/>',
            f'{g}  <joint name="{p}finger_{side}" class="finger" axis="0 {sign} 0"/>',
            f'{g}  <geom class="robot" type="box" size="0.01 0.004 0.035" pos="0 {sign * (2 * py + 0.004)} 0.115" material="grey"/>',
            f'{g}  <geom name="{p}pad_{side}" class="pad" type="box" size="{px} {py} {pz}" pos="0 {sign * py} {TCP_Z_M}"/>',
            f"{g}</body>",
        ]
    for _ in range(6):
        out.append(f"{ind}</body>")
        ind = ind[:-2]
    out.append(f"{indent}</body>")
    return "\n".join(out)


def mjcf_rig(rig: str) -> str:
    prefixes = ARM_BASES[rig]
    head_pos, head_target = HEAD_CAMERA_M[rig]
    hx, hy = look_at_axes(np.array(head_pos), np.array(head_target), np.array([0, 0, 1.0]))
    arms = "\n".join(mjcf_arm(p, xy, "    ") for p, xy in prefixes.items())
    excludes = []
    for p in prefixes:
        chain = [f"{p}base_link"] + [f"{p}link{i}" for i in range(1, 7)]
        for i in range(len(chain)):
            for j in range(i + 1, min(i + 4, len(chain))):
                excludes.append(f'    <exclude body1="{chain[i]}" body2="{chain[j]}"/>')
        excludes.append(f'    <exclude body1="{p}finger_left" body2="{p}finger_right"/>')
        for f in ("finger_left", "finger_right"):
            excludes.append(f'    <exclude body1="{p}link5" body2="{p}{f}"/>')
    act = []
    for p in prefixes:
        for i in range(6):
            act.append(
                f'    <position name="{p}joint{i + 1}" joint="{p}joint{i + 1}" kp="{KP[i]}" dampratio="1" forcerange="{-EFFORT_NM[i]} {EFFORT_NM[i]}" ctrlrange="{math.radians(LOWER_DEG[i]):.6f} {math.radians(UPPER_DEG[i]):.6f}"/>'
            )
        for f in ("finger_left", "finger_right"):
            act.append(
                f'    <position name="{p}{f}" joint="{p}{f}" kp="600" dampratio="1" forcerange="-12 12" ctrlrange="0 {FINGER_STROKE_M}"/>'
            )
    # net external contact force on each arm (world frame, sign: force exerted by the arm)
    # and the number of contacts on each pad (cheap "anything touching?" checks)
    sensors = []
    for p in prefixes:
        sensors.append(
            f'    <contact name="{p}arm_force" subtree1="{p}link1" data="found force" reduce="netforce" num="1"/>'
        )
        for side in ("left", "right"):
            sensors.append(
                f'    <contact name="{p}pad_{side}_touch" geom1="{p}pad_{side}" data="found" num="1"/>'
            )
    home = home_keyframe(rig)
    return f"""<mujoco model="{rig}">
  <!-- Generated by captain_ros/data/urdf/generate.py from AgileX PiPER published kinematics. Do not edit. -->
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.002" integrator="implicitfast" cone="elliptic" impratio="5"/>
  <visual>
    <global offwidth="640" offheight="640"/>
    <quality shadowsize="0" offsamples="0"/>
    <headlight ambient="0.35 0.35 0.35" diffuse="0.3 0.3 0.3" specular="0 0 0"/>
    <map znear="0.01" zfar="20"/>
  </visual>
  <default>
    <default class="arm">
      <joint type="hinge" axis="0 0 1" armature="0.05" damping="0.5" frictionloss="0.05"/>
    </default>
    <default class="finger">
      <joint type="slide" range="0 {FINGER_STROKE_M}" armature="0.01" damping="2"/>
    </default>
    <default class="robot">
      <geom contype="1" conaffinity="1" friction="0.8 0.01 0.001" group="1"/>
    </default>
    <default class="pad">
      <geom contype="1" conaffinity="1" friction="1.5 0.02 0.002" condim="4" solref="0.004 1" rgba="0.1 0.1 0.1 1" group="1"/>
    </default>
  </default>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1="0.55 0.5 0.45" rgb2="0.5 0.45 0.4" width="256" height="256"/>
    <material name="table" rgba="0.62 0.52 0.42 1" reflectance="0"/>
    <material name="floor" texture="grid" texrepeat="6 6" reflectance="0"/>
    <material name="white" rgba="0.85 0.85 0.85 1"/>
    <material name="grey" rgba="0.45 0.45 0.48 1"/>
    <material name="dark" rgba="0.12 0.12 0.12 1"/>
    <!-- SCENE_ASSETS -->
  </asset>
  <worldbody>
    <light name="main" pos="0 0 2" dir="0 0 -1" diffuse="0.8 0.8 0.8" specular="0 0 0" castshadow="false"/>
    <geom name="floor" type="plane" size="3 3 0.1" pos="0 0 -0.75" material="floor" contype="1" conaffinity="1"/>
    <body name="table" pos="0.3 0 -0.025">
      <geom name="table_top" type="box" size="0.45 0.65 0.025" material="table" contype="1" conaffinity="1" friction="0.8 0.01 0.001"/>
      <geom name="table_leg" type="box" size="0.4 0.6 0.36" pos="0 0 -0.385" material="table" contype="0" conaffinity="0"/>
    </body>
    <camera name="head" pos="{fmt(head_pos)}" xyaxes="{fmt(hx)} {fmt(hy)}" fovy="{HEAD_FOVY_DEG}"/>
{arms}
    <!-- SCENE_WORLDBODY -->
  </worldbody>
  <contact>
{chr(10).join(excludes)}
  </contact>
  <actuator>
{chr(10).join(act)}
  </actuator>
  <sensor>
{chr(10).join(sensors)}
  </sensor>
{home}
</mujoco>
"""


def home_keyframe(rig: str) -> str:
    """``<keyframe>`` holding the home ("ready") configuration, jaws open."""
    q = np.radians(HOME_Q_DEG)
    vals = []
    for _ in ARM_BASES[rig]:
        vals += list(q) + [FINGER_STROKE_M, FINGER_STROKE_M]
    return f'  <!-- KEYFRAME -->\n  <keyframe>\n    <key name="home" qpos="{fmt(vals)}" ctrl="{fmt(vals)}"/>\n  </keyframe>'


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


# --- URDF -------------------------------------------------------------------------------------
def urdf_arm(p: str, parent: str, base_xy: tuple[float, float]) -> str:
    out = [
        f'  <joint name="{p}base_mount" type="fixed"><parent link="{parent}"/><child link="{p}base_link"/>'
        f'<origin xyz="{base_xy[0]} {base_xy[1]} 0" rpy="0 0 0"/></joint>',
        f'  <link name="{p}base_link"><visual><origin xyz="0 0 0.03"/><geometry><cylinder radius="0.055" length="0.06"/></geometry></visual></link>',
    ]
    segs = link_segments()
    prev = f"{p}base_link"
    for i in range(6):
        t = dh_origin(i)
        rpy = rpy_of(t[:3, :3])
        out.append(
            f'  <joint name="{p}joint{i + 1}" type="revolute"><parent link="{prev}"/><child link="{p}link{i + 1}"/>'
            f'<origin xyz="{fmt(t[:3, 3])}" rpy="{fmt(rpy)}"/><axis xyz="0 0 1"/>'
            f'<limit lower="{math.radians(LOWER_DEG[i]):.6f}" upper="{math.radians(UPPER_DEG[i]):.6f}" effort="{EFFORT_NM[i]}" velocity="{MAX_VEL_RAD_S[i]}"/></joint>'
        )
        geo = ""
        if i < 5:
            a, b, r = segs[i]
            length = float(np.linalg.norm(b - a))
            if length < 1e-9:
                geo = f'<visual><geometry><sphere radius="{r}"/></geometry></visual>'
            else:
                mid = (a + b) / 2
                z = (b - a) / length
                rr = np.eye(3) if abs(z[2]) > 0.999999 else _frame_with_z(z)
                geo = (
                    f'<collision><origin xyz="{fmt(mid)}" rpy="{fmt(rpy_of(rr))}"/>'
                    f'<geometry><cylinder radius="{r}" length="{length:.6f}"/></geometry></collision>'
                )
        out.append(
            f'  <link name="{p}link{i + 1}"><inertial><mass value="{LINK_MASS_KG[i]}"/>'
            f'<inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.002"/></inertial>{geo}</link>'
        )
        prev = f"{p}link{i + 1}"
    for side, sign in (("left", 1), ("right", -1)):
        out.append(
            f'  <joint name="{p}finger_{side}" type="prismatic"><parent link="{p}link6"/><child link="{p}finger_{side}"/>'
            f'<origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="0 {sign} 0"/><limit lower="0" upper="{FINGER_STROKE_M}" effort="12" velocity="0.1"/></joint>'
        )
        out.append(
            f'  <link name="{p}finger_{side}"><collision><origin xyz="0 {sign * PAD_SIZE_M[2] / 2} {TCP_Z_M}"/>'
            f'<geometry><box size="{PAD_SIZE_M[1]} {PAD_SIZE_M[2]} {PAD_SIZE_M[0]}"/></geometry></collision></link>'
        )
    out.append(
        f'  <joint name="{p}tcp_joint" type="fixed"><parent link="{p}link6"/><child link="{p}tcp"/><origin xyz="0 0 {TCP_Z_M}" rpy="0 0 0"/></joint>'
    )
    out.append(f'  <link name="{p}tcp"/>')
    wx, wy = look_at_axes(
        np.array(WRIST_CAM_POS_M), np.array(WRIST_CAM_TARGET_M), np.array([-1.0, 0, 0])
    )
    r_opt = np.column_stack(
        [wx, -wy, np.cross(wx, -wy)]
    )  # optical frame: x right, y down, z forward
    out.append(
        f'  <joint name="{p}wrist_camera_joint" type="fixed"><parent link="{p}link6"/><child link="{p}wrist_optical_frame"/>'
        f'<origin xyz="{fmt(WRIST_CAM_POS_M)}" rpy="{fmt(rpy_of(r_opt))}"/></joint>'
    )
    out.append(f'  <link name="{p}wrist_optical_frame"/>')
    return "\n".join(out)


def _frame_with_z(z: np.ndarray) -> np.ndarray:
    x = np.cross([0.0, 0.0, 1.0], z)
    x = x / np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def urdf_rig(rig: str) -> str:
    head_pos, head_target = HEAD_CAMERA_M[rig]
    hx, hy = look_at_axes(np.array(head_pos), np.array(head_target), np.array([0, 0, 1.0]))
    r_opt = np.column_stack([hx, -hy, np.cross(hx, -hy)])
    arms = "\n".join(urdf_arm(p, "world", xy) for p, xy in ARM_BASES[rig].items())
    return f"""<?xml version="1.0"?>
<!-- Generated by captain_ros/data/urdf/generate.py from AgileX PiPER published kinematics. Do not edit. -->
<robot name="{rig}">
  <link name="world"/>
  <joint name="table_joint" type="fixed"><parent link="world"/><child link="table"/><origin xyz="0.3 0 -0.025"/></joint>
  <link name="table"><collision><geometry><box size="0.9 1.3 0.05"/></geometry></collision></link>
  <joint name="head_camera_joint" type="fixed"><parent link="world"/><child link="head_optical_frame"/>
    <origin xyz="{fmt(head_pos)}" rpy="{fmt(rpy_of(r_opt))}"/></joint>
  <link name="head_optical_frame"/>
{arms}
</robot>
"""


def main() -> None:
    for rig in ARM_BASES:
        (HERE / f"{rig}.xml").write_text(mjcf_rig(rig))
        (HERE / f"{rig}.urdf").write_text(urdf_rig(rig))
        print("wrote", rig)


if __name__ == "__main__":
    main()
