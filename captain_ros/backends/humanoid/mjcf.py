"""MJCF of the scene: the humanoid pair (:mod:`captain_ros.backends.humanoid.body_mjcf`), the free
payload and a corridor layout (built with ElementTree).

Collision groups (contype/conaffinity bits): 1 static scene (floor, walls, pedestals), 2 payload,
4 robot bodies, 8 palms and forearms. Robots do not touch the floor (the base is carried by its
slides) and do not collide with each other or themselves.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

# the humanoid (its numbers also importable from here: sim, measure and support read them)
from captain_ros.backends.humanoid.body_mjcf import (  # noqa: F401
    ANKLE_Z_M,
    ARM_JOINTS,
    ARM_KD_NM_S_RAD,
    ARM_KP_NM_RAD,
    ARM_TORQUE_NM,
    PELVIS_Z_M,
    PREFIX,
    ROBOTS,
    SIDES,
    _actuators,
    _robot,
    _sub,
)
from captain_ros.backends.humanoid.layouts import WALL_HEIGHT_M, WALL_THICKNESS_M, Layout

PAYLOAD_HALF_M = (0.40, 0.22, 0.08)
PAYLOAD_MASS_KG = 3.0


@dataclass(frozen=True)
class SceneGeometry:
    """Numbers the model was built with (for the bridge and the verifier)."""

    payload_half_m: tuple[float, float, float]
    payload_start_z_m: float
    start_support_top_m: float
    target_support_top_m: float
    spacing_m: float


def _box_between(world: ET.Element, name: str, a: np.ndarray, b: np.ndarray) -> None:
    mid = (a + b) / 2.0
    d = b - a
    length = float(np.linalg.norm(d)) + WALL_THICKNESS_M
    yaw = math.atan2(d[1], d[0])
    _sub(
        world,
        "geom",
        name=name,
        type="box",
        size=(length / 2, WALL_THICKNESS_M / 2, WALL_HEIGHT_M / 2),
        pos=(mid[0], mid[1], WALL_HEIGHT_M / 2),
        euler=(0, 0, yaw),
        contype=1,
        conaffinity=14,
        rgba=(0.75, 0.72, 0.68, 1),
    )


def build_xml(
    layout: Layout, spacing_m: float, payload_start_z_m: float, start_support_top_m: float
) -> str:
    """MJCF text of ``layout`` with the pair, the payload resting on the start pedestal."""
    root = ET.Element("mujoco", model=f"coevolve_{layout.name}")
    _sub(root, "compiler", angle="radian", autolimits="true")
    _sub(root, "option", timestep=0.002, integrator="implicitfast", cone="elliptic", impratio=5)
    vis = _sub(root, "visual")
    _sub(vis, "global", offwidth=640, offheight=480)
    _sub(root, "size", memory="8M")
    _sub(_sub(root, "default"), "geom", solref=(0.01, 1.0), solimp=(0.95, 0.99, 0.001))
    asset = _sub(root, "asset")
    _sub(
        asset,
        "texture",
        name="grid",
        type="2d",
        builtin="checker",
        width=256,
        height=256,
        rgb1=(0.62, 0.64, 0.66),
        rgb2=(0.55, 0.57, 0.6),
    )
    _sub(asset, "material", name="floor", texture="grid", texrepeat=(8, 8))
    world = _sub(root, "worldbody")
    _sub(world, "light", name="sun", pos=(4, 2, 6), dir=(0, 0, -1), diffuse=(0.8, 0.8, 0.8))
    _sub(
        world,
        "geom",
        name="floor",
        type="plane",
        size=(30, 30, 0.1),
        material="floor",
        contype=1,
        conaffinity=2,
    )
    for i, (a, b) in enumerate(layout.wall_segments()):
        _box_between(world, f"wall_{i}", a, b)
    start, target = layout.supports(start_support_top_m)
    for sup in (start, target):
        _sub(
            world,
            "geom",
            name=sup.name,
            type="box",
            size=(sup.half_x_m, sup.half_y_m, sup.top_z_m / 2),
            pos=(sup.x_m, sup.y_m, sup.top_z_m / 2),
            contype=1,
            conaffinity=14,
            friction=(0.9, 0.02, 0.001),
            rgba=(0.45, 0.35, 0.25, 1),
        )
    _sub(
        world,
        "site",
        name="target_site",
        pos=(target.x_m, target.y_m, target.top_z_m + 0.002),
        size=(0.30, 0.001),
        type="cylinder",
        rgba=(0.1, 0.8, 0.2, 0.25),
    )
    for r, rgba in zip(ROBOTS, ((0.25, 0.45, 0.75, 1), (0.75, 0.35, 0.3, 1)), strict=True):
        _robot(world, r, rgba)
    sx, sy = layout.start_xy
    pay = _sub(
        world,
        "body",
        name="payload",
        pos=(sx, sy, payload_start_z_m),
        euler=(0, 0, layout.start_heading_rad + math.pi / 2),
    )
    _sub(pay, "freejoint", name="payload_free")
    _sub(
        pay,
        "geom",
        name="payload_box",
        type="box",
        size=PAYLOAD_HALF_M,
        mass=PAYLOAD_MASS_KG,
        contype=2,
        conaffinity=13,
        friction=(0.9, 0.02, 0.001),
        rgba=(0.85, 0.75, 0.3, 1),
    )
    _sub(pay, "site", name="payload_site", pos=(0, 0, 0), size=(0.02,))
    act = _sub(root, "actuator")
    for r in ROBOTS:
        _actuators(act, r)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode")
