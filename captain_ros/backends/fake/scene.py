"""Scene primitives of the kinematic fake rig: boxes, their construction from a SceneSpec, rotations."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.scene import SceneSpec


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Rotation ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll),
        math.sin(roll),
        math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw),
        math.sin(yaw),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_rpy(r: np.ndarray) -> np.ndarray:
    """Inverse of :func:`rpy_matrix` (pitch in [-pi/2, pi/2])."""
    pitch = math.asin(max(-1.0, min(1.0, -r[2, 0])))
    roll = math.atan2(r[2, 1], r[2, 2])
    yaw = math.atan2(r[1, 0], r[0, 0])
    return np.array([roll, pitch, yaw])


@dataclass
class FakeBox:
    """A box object. ``size_m`` are full extents [m]; ``rgb`` its colour (0-255)."""

    name: str
    center_m: np.ndarray
    size_m: np.ndarray
    yaw_rad: float = 0.0
    rgb: tuple[int, int, int] = (200, 40, 40)
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    held_by: str | None = None
    rel_tool: np.ndarray | None = None  # 4x4 box pose in the tool frame while held
    ever_held: bool = False
    initial_center_m: np.ndarray | None = None
    initial_rotation: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.center_m = np.asarray(self.center_m, dtype=float).copy()
        self.size_m = np.asarray(self.size_m, dtype=float).copy()
        if self.center_m.shape != (3,) or self.size_m.shape != (3,) or np.any(self.size_m <= 0):
            raise InvalidArgumentError(
                f"box {self.name}: center_m needs 3 numbers and size_m 3 positive ones"
            )
        self.rotation = rpy_matrix(0.0, 0.0, self.yaw_rad)
        self.initial_center_m = self.center_m.copy()
        self.initial_rotation = self.rotation.copy()

    def corners(self) -> np.ndarray:
        """The 8 corners (8, 3) in the world frame [m]."""
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        return self.center_m + (signs * self.size_m / 2) @ self.rotation.T


def boxes_from_scene(scene: SceneSpec) -> list[FakeBox]:
    """Approximate the bodies of a SceneSpec's MJCF as boxes (cylinders/spheres by their bounding box).

    Colour comes from the geom's ``rgba`` or its ``material`` (in ``asset_xml``); yaw from the body's
    ``quat`` or ``euler``.
    """
    root = ET.fromstring(f"<worldbody>{scene.worldbody_xml}</worldbody>")
    materials: dict[str, str] = {}
    if scene.asset_xml.strip():
        for mat in ET.fromstring(f"<asset>{scene.asset_xml}</asset>").iter("material"):
            if mat.get("rgba"):
                materials[mat.get("name", "")] = mat.get("rgba", "")
    wanted = set(scene.object_bodies)
    boxes = []
    for body in root.iter("body"):
        name = body.get("name", "")
        if wanted and name not in wanted:
            continue
        geom = body.find("geom")
        if geom is None:
            continue
        pos = np.array([float(v) for v in body.get("pos", "0 0 0").split()])
        size = [float(v) for v in geom.get("size", "0.02 0.02 0.02").split()]
        gtype = geom.get("type", "sphere")
        if gtype == "box" and len(size) >= 3:
            full = 2 * np.array(size[:3])
        elif gtype in ("cylinder", "capsule") and len(size) >= 2:
            full = np.array([2 * size[0], 2 * size[0], 2 * size[1]])
        else:
            full = np.full(3, 2 * size[0])
        rgba_text = geom.get("rgba") or materials.get(geom.get("material", ""), "0.8 0.2 0.2 1")
        rgba = [float(v) for v in rgba_text.split()]
        if body.get("quat"):
            w, x, y, z = (float(v) for v in body.get("quat", "1 0 0 0").split())
            yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        else:
            euler = [float(v) for v in body.get("euler", "0 0 0").split()]
            yaw = euler[2] if len(euler) == 3 else 0.0
        boxes.append(
            FakeBox(
                name, pos, full, yaw, (int(255 * rgba[0]), int(255 * rgba[1]), int(255 * rgba[2]))
            )
        )
    return boxes
