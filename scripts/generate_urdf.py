"""Generate the AgileX PiPER descriptions (URDF + MJCF, single arm and dual rig) into the
repository's top-level ``urdf/`` (installed to ``share/captain_ros/urdf``).

Run ``python scripts/generate_urdf.py`` after changing a parameter; the generated files are
committed (``tests/test_urdf_generated.py`` checks that they match). The published figures and
the frame math are in ``scripts/piper_kinematics.py``.

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
import sys
from pathlib import Path

import numpy as np
from piper_kinematics import (
    ARM_BASES,
    EFFORT_NM,
    FINGER_STROKE_M,
    HEAD_CAMERA_M,
    HEAD_FOVY_DEG,
    HOME_Q_DEG,
    KP,
    LINK_MASS_KG,
    LOWER_DEG,
    MAX_VEL_RAD_S,
    PAD_SIZE_M,
    TCP_Z_M,
    UPPER_DEG,
    WRIST_CAM_POS_M,
    WRIST_CAM_TARGET_M,
    WRIST_FOVY_DEG,
    dh_origin,
    fmt,
    frame_with_z,
    link_segments,
    look_at_axes,
    quat_of,
    rpy_of,
)

URDF_DIR = Path(__file__).resolve().parents[1] / "urdf"
"""Where the descriptions go: the repository's top-level ``urdf/``."""


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
  <!-- Generated by scripts/generate_urdf.py from AgileX PiPER published kinematics. Do not edit. -->
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
                rr = np.eye(3) if abs(z[2]) > 0.999999 else frame_with_z(z)
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


def urdf_rig(rig: str) -> str:
    head_pos, head_target = HEAD_CAMERA_M[rig]
    hx, hy = look_at_axes(np.array(head_pos), np.array(head_target), np.array([0, 0, 1.0]))
    r_opt = np.column_stack([hx, -hy, np.cross(hx, -hy)])
    arms = "\n".join(urdf_arm(p, "world", xy) for p, xy in ARM_BASES[rig].items())
    return f"""<?xml version="1.0"?>
<!-- Generated by scripts/generate_urdf.py from AgileX PiPER published kinematics. Do not edit. -->
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


def main(argv: list[str] | None = None) -> None:
    """``generate_urdf.py [OUT_DIR]``: write both rigs (default: the repository's ``urdf/``)."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else URDF_DIR
    out.mkdir(parents=True, exist_ok=True)
    for rig in ARM_BASES:
        (out / f"{rig}.xml").write_text(mjcf_rig(rig))
        (out / f"{rig}.urdf").write_text(urdf_rig(rig))
        print("wrote", rig, "to", out)


if __name__ == "__main__":
    main()
