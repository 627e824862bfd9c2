"""MJCF of one humanoid of the pair (built with ElementTree) and the numbers it is built with.

Each humanoid is primitive geometry with G1-like proportions (about 1.3 m, 34 kg): a floating base
reduced to what a whole-body/locomotion controller exposes (planar ``x, y, yaw`` slides driven by
force-limited servos, a pelvis height slide, and two torque-limited *balance* hinges at the ankles
that stand in for the balance the walking controller keeps: the torso tilts under external load and
the robot falls past a limit), a torso and head, and two 7-joint arms (shoulder pitch/roll/yaw,
elbow, wrist roll/pitch/yaw: 14 regulated joints per robot, as the paper's support adapter). The
forearm and palm are flat box proxies with the paper's half extents (forearm 0.11 x 0.032 x 0.006 m,
palm 0.06 x 0.035 x 0.006 m). Arm joints are position servos with kp 24 N m/rad, kd 1.5 N m s/rad
and torque limits; arm links are gravity-compensated (the real adapter runs on top of the robot's
own gravity feed-forward). Legs do not step: the base slides on the floor, so foot contact, swing
dynamics and foot slip are not modelled (they appear only as the locomotion model's tracking error
and pelvis bobbing, :mod:`captain_ros.backends.humanoid.locomotion`).

Its bodies are in collision group 4, palms and forearms in 8.
:mod:`captain_ros.backends.humanoid.mjcf` puts the pair in a scene.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

ROBOTS = ("robot_a", "robot_b")
PREFIX = {"robot_a": "a_", "robot_b": "b_"}
ARM_JOINTS = (
    "shoulder_pitch",
    "shoulder_roll",
    "shoulder_yaw",
    "elbow",
    "wrist_roll",
    "wrist_pitch",
    "wrist_yaw",
)
SIDES = ("left", "right")
# limits of one arm, in ARM_JOINTS order (the right arm mirrors roll and yaw)
ARM_LOWER_RAD = (-2.8, -0.3, -2.6, -2.0, -1.9, -1.6, -1.6)
ARM_UPPER_RAD = (1.0, 2.2, 2.6, 0.4, 1.9, 1.6, 1.6)
ARM_TORQUE_NM = (25.0, 25.0, 25.0, 25.0, 25.0, 5.0, 5.0)
ARM_KP_NM_RAD = 24.0
ARM_KD_NM_S_RAD = 1.5
PALM_HALF_M = (0.006, 0.035, 0.06)
FOREARM_HALF_M = (0.006, 0.032, 0.11)
UPPER_ARM_M = 0.24
FOREARM_M = 0.22
ANKLE_Z_M = 0.06
PELVIS_Z_M = 0.72  # above the ankle
SHOULDER_M = (0.02, 0.19, 0.34)  # above the pelvis
UPPER_BODY_KG = 22.0  # pelvis, torso, head and arms: carried by the height slide
BASE_KP, BASE_KV, BASE_FORCE_N = 3000.0, 650.0, 400.0
YAW_KP, YAW_KV, YAW_TORQUE_NM = 800.0, 70.0, 200.0
HEIGHT_KP, HEIGHT_KV, HEIGHT_FORCE_N = 20000.0, 1400.0, 1000.0
BALANCE_KP, BALANCE_KV, BALANCE_TORQUE_NM = 2500.0, 400.0, 300.0


def _sub(parent: ET.Element, tag: str, **attrs: object) -> ET.Element:
    return ET.SubElement(parent, tag, {k.rstrip("_"): _fmt(v) for k, v in attrs.items()})


def _fmt(v: object) -> str:
    if isinstance(v, (tuple, list, np.ndarray)):
        return " ".join(_fmt(x) for x in v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _arm(parent: ET.Element, p: str, side: str) -> None:
    s = 1.0 if side == "left" else -1.0
    body = _sub(
        parent,
        "body",
        name=f"{p}{side}_shoulder",
        pos=(SHOULDER_M[0], s * SHOULDER_M[1], SHOULDER_M[2]),
        gravcomp=1,
    )
    chain = body
    for i, j in enumerate(ARM_JOINTS):
        lo, hi = ARM_LOWER_RAD[i], ARM_UPPER_RAD[i]
        if side == "right" and j in ("shoulder_roll", "shoulder_yaw", "wrist_roll", "wrist_yaw"):
            lo, hi = -hi, -lo
        axis = {
            "shoulder_pitch": (0, 1, 0),
            "shoulder_roll": (1, 0, 0),
            "shoulder_yaw": (0, 0, 1),
            "elbow": (0, 1, 0),
            "wrist_roll": (0, 0, 1),
            "wrist_pitch": (0, 1, 0),
            "wrist_yaw": (1, 0, 0),
        }[j]
        if i > 0:
            pos = {"elbow": (0, 0, -UPPER_ARM_M), "wrist_pitch": (0, 0, -FOREARM_M)}.get(
                j, (0, 0, 0)
            )
            chain = _sub(chain, "body", name=f"{p}{side}_{j}_link", pos=pos, gravcomp=1)
        _sub(
            chain,
            "joint",
            name=f"{p}{side}_{j}",
            axis=axis,
            range=(lo, hi),
            armature=0.01,
            damping=0.05,
        )
        if j == "shoulder_yaw":
            _sub(
                chain,
                "geom",
                name=f"{p}{side}_upper_arm",
                type="capsule",
                size=(0.04,),
                fromto=(0, 0, -0.03, 0, 0, -UPPER_ARM_M + 0.03),
                mass=1.0,
                contype=4,
                conaffinity=0,
                rgba=(0.55, 0.57, 0.62, 1),
            )
        elif j == "wrist_roll":
            _sub(
                chain,
                "geom",
                name=f"{p}{side}_forearm",
                type="box",
                size=FOREARM_HALF_M,
                pos=(0, 0, -FOREARM_HALF_M[2]),
                mass=0.6,
                contype=8,
                conaffinity=0,
                friction=(1.0, 0.02, 0.001),
                rgba=(0.35, 0.37, 0.42, 1),
            )
        elif j == "wrist_yaw":
            _sub(
                chain,
                "geom",
                name=f"{p}{side}_palm",
                type="box",
                size=PALM_HALF_M,
                pos=(0, 0, -PALM_HALF_M[2]),
                mass=0.3,
                contype=8,
                conaffinity=0,
                friction=(1.0, 0.02, 0.001),
                rgba=(0.9, 0.6, 0.2, 1),
            )
            _sub(
                chain,
                "site",
                name=f"{p}{side}_palm_site",
                pos=(PALM_HALF_M[0], 0, -PALM_HALF_M[2]),
                size=(0.01,),
            )
        else:
            _sub(chain, "inertial", pos=(0, 0, 0), mass=0.1, diaginertia=(1e-4, 1e-4, 1e-4))


def _robot(world: ET.Element, name: str, rgba: tuple[float, ...]) -> None:
    p = PREFIX[name]
    base = _sub(world, "body", name=f"{p}base", pos=(0, 0, 0))
    for j, kind, axis in (
        ("x", "slide", (1, 0, 0)),
        ("y", "slide", (0, 1, 0)),
        ("yaw", "hinge", (0, 0, 1)),
    ):
        _sub(base, "joint", name=f"{p}{j}", type=kind, axis=axis, damping=1.0)
    _sub(base, "inertial", pos=(0, 0, 0), mass=1.0, diaginertia=(0.01, 0.01, 0.01))
    bal = _sub(base, "body", name=f"{p}balance", pos=(0, 0, ANKLE_Z_M))
    _sub(bal, "joint", name=f"{p}pitch", axis=(0, 1, 0), range=(-0.7, 0.7), damping=5.0)
    _sub(bal, "joint", name=f"{p}roll", axis=(1, 0, 0), range=(-0.7, 0.7), damping=5.0)
    for s in (1.0, -1.0):
        _sub(
            bal,
            "geom",
            type="capsule",
            size=(0.055,),
            fromto=(0, s * 0.1, 0.0, 0, s * 0.1, PELVIS_Z_M - 0.05),
            mass=5.0,
            contype=4,
            conaffinity=0,
            rgba=rgba,
        )
        _sub(
            bal,
            "geom",
            type="box",
            size=(0.11, 0.05, 0.03),
            pos=(0.03, s * 0.1, -0.03),
            mass=0.5,
            contype=4,
            conaffinity=0,
            rgba=(0.2, 0.2, 0.2, 1),
        )
    pelvis = _sub(bal, "body", name=f"{p}pelvis", pos=(0, 0, PELVIS_Z_M))
    _sub(
        pelvis,
        "joint",
        name=f"{p}height",
        type="slide",
        axis=(0, 0, 1),
        range=(-0.22, 0.04),
        damping=10.0,
    )
    _sub(
        pelvis,
        "geom",
        type="box",
        size=(0.10, 0.15, 0.07),
        pos=(0, 0, 0),
        mass=3.0,
        contype=4,
        conaffinity=0,
        rgba=rgba,
    )
    _sub(
        pelvis,
        "geom",
        name=f"{p}torso",
        type="box",
        size=(0.11, 0.16, 0.17),
        pos=(0, 0, 0.24),
        mass=12.0,
        contype=4,
        conaffinity=0,
        rgba=rgba,
    )
    _sub(
        pelvis,
        "geom",
        type="sphere",
        size=(0.1,),
        pos=(0, 0, 0.55),
        mass=3.0,
        contype=4,
        conaffinity=0,
        rgba=(0.85, 0.85, 0.85, 1),
    )
    _sub(pelvis, "site", name=f"{p}torso_site", pos=(0, 0, 0.24), size=(0.02,))
    for side in SIDES:
        _arm(pelvis, p, side)


def _actuators(act: ET.Element, name: str) -> None:
    p = PREFIX[name]
    for j, kp, kv, f in (
        ("x", BASE_KP, BASE_KV, BASE_FORCE_N),
        ("y", BASE_KP, BASE_KV, BASE_FORCE_N),
        ("yaw", YAW_KP, YAW_KV, YAW_TORQUE_NM),
    ):
        _sub(
            act,
            "general",
            name=f"{p}{j}_servo",
            joint=f"{p}{j}",
            gainprm=(kp,),
            biasprm=(0, -kp, -kv),
            biastype="affine",
            forcelimited="true",
            forcerange=(-f, f),
        )
    g = UPPER_BODY_KG * 9.81
    _sub(
        act,
        "general",
        name=f"{p}height_servo",
        joint=f"{p}height",
        gainprm=(HEIGHT_KP,),
        biasprm=(g, -HEIGHT_KP, -HEIGHT_KV),
        biastype="affine",
        forcelimited="true",
        forcerange=(-HEIGHT_FORCE_N, HEIGHT_FORCE_N),
    )
    for j in ("pitch", "roll"):
        _sub(
            act,
            "general",
            name=f"{p}{j}_servo",
            joint=f"{p}{j}",
            gainprm=(BALANCE_KP,),
            biasprm=(0, -BALANCE_KP, -BALANCE_KV),
            biastype="affine",
            forcelimited="true",
            forcerange=(-BALANCE_TORQUE_NM, BALANCE_TORQUE_NM),
        )
    for side in SIDES:
        for i, j in enumerate(ARM_JOINTS):
            _sub(
                act,
                "general",
                name=f"{p}{side}_{j}_servo",
                joint=f"{p}{side}_{j}",
                gainprm=(ARM_KP_NM_RAD,),
                biasprm=(0, -ARM_KP_NM_RAD, -ARM_KD_NM_S_RAD),
                biastype="affine",
                forcelimited="true",
                forcerange=(-ARM_TORQUE_NM[i], ARM_TORQUE_NM[i]),
            )
