"""Analytic RGB-D renderer and a minimal Backend for perception tests (no simulator).

Scenes are gravity-aligned boxes (with yaw) and vertical cylinders on a table top at z = 0;
pixels are ray-cast exactly through pixel centres (cx = (W - 1) / 2, as the MuJoCo backend), colours are Lambert-shaded
so faces of one object differ in brightness, and the id image gives ground-truth masks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.backends.fake.raycast import (
    camera_rays,
    hit_box,
    hit_cylinder,
    hit_rectangle,
    look_at,
    shade,
)
from captain_ros.backends.fake.scene import rpy_matrix
from captain_ros.core.geometry import Pose
from captain_ros.core.types import ArmSpec, CameraFrame, GripperState, JointState, RobotSpec
from captain_ros.perception.camera import intrinsics_from_fovy

TABLE_RGB = (170, 150, 120)
FLOOR_RGB = (90, 90, 90)


@dataclass
class Box:
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    rgb: tuple[int, int, int]
    yaw: float = 0.0


@dataclass
class Cylinder:
    center: tuple[float, float, float]
    radius: float
    height: float
    rgb: tuple[int, int, int]


def render(
    objects,
    world_from_camera,
    width=512,
    height=512,
    fovy_deg=58.0,
    name="head",
    stamp_s=0.0,
    table=((-0.1, 0.9), (-0.6, 0.6)),
) -> CameraFrame:
    """Ray-cast an RGB-D frame (with an id image: 0 table/floor, i+1 object i) with the fake
    rig's ray caster (:mod:`captain_ros.backends.fake.raycast`)."""
    k = intrinsics_from_fovy(fovy_deg, width, height)
    d = camera_rays(height, width, fovy_deg) @ world_from_camera[:3, :3].T
    o = world_from_camera[:3, 3]
    on_table = hit_rectangle(
        o, d, 0.0, np.array([table[0][0], table[1][0]]), np.array([table[0][1], table[1][1]])
    )
    floor = hit_rectangle(o, d, -0.75, np.full(2, -np.inf), np.full(2, np.inf))
    t_best = np.where(np.isfinite(on_table), on_table, floor)
    ids = np.zeros(len(d), dtype=np.int32)
    n_all = np.tile([0.0, 0.0, 1.0], (len(d), 1))
    rgb = np.where(
        np.isfinite(on_table)[:, None], np.array(TABLE_RGB, float), np.array(FLOOR_RGB, float)
    )
    for i, ob in enumerate(objects):
        if isinstance(ob, Box):
            t, n = hit_box(
                o,
                d,
                np.asarray(ob.center, float),
                rpy_matrix(0.0, 0.0, ob.yaw),
                np.asarray(ob.size, float),
            )
        else:
            t, n = hit_cylinder(o, d, np.asarray(ob.center, float), ob.radius, ob.height)
        closer = t < t_best
        t_best = np.where(closer, t, t_best)
        ids[closer] = i + 1
        n_all[closer] = n[closer]
        rgb[closer] = ob.rgb
    img = np.clip(rgb * shade(n_all)[:, None], 0, 255).astype(np.uint8).reshape(height, width, 3)
    depth = np.where(np.isfinite(t_best), t_best, 0.0).astype(np.float32).reshape(height, width)
    return CameraFrame(name, img, depth, k, world_from_camera, stamp_s, ids.reshape(height, width))


HEAD_POSE = look_at([0.95, 0.0, 0.6], [0.35, 0.0, 0.0])


@dataclass
class SynthBackend(Backend):
    """A kinematic stand-in rig: one arm (or two), a head camera and a downward wrist camera.

    ``objects`` is mutable: tests move objects between observations. The TCP pose, jaw opening and
    holding flag are plain attributes.
    """

    objects: list = field(default_factory=list)
    dual: bool = False
    tcp: dict = field(default_factory=dict)
    opening: dict = field(default_factory=dict)
    holding: dict = field(default_factory=dict)
    clock: float = 0.0
    size_px: int = 512

    def __post_init__(self) -> None:
        names = ("left", "right") if self.dual else ("arm",)
        arms = []
        for i, n in enumerate(names):
            base = Pose([0.0, 0.25 * (1 - 2 * i) if self.dual else 0.0, 0.0])
            arms.append(
                ArmSpec(
                    n,
                    tuple(f"{n}_j{j}" for j in range(6)),
                    -np.ones(6) * 3,
                    np.ones(6) * 3,
                    np.ones(6),
                    base,
                    0.65,
                    0.07,
                    (0.04, 0.02, 0.008),
                    f"{n}_wrist" if self.dual else "wrist",
                )
            )
            self.tcp.setdefault(
                n, Pose([0.3, base.position_m[1], 0.35], [0, 0.7071068, 0.7071068, 0])
            )
            self.opening.setdefault(n, 0.07)
            self.holding.setdefault(n, False)
        cams = ("head",) + tuple(a.wrist_camera for a in arms)
        self._spec = RobotSpec("synth_dual" if self.dual else "synth", tuple(arms), cams)

    @property
    def spec(self) -> RobotSpec:
        return self._spec

    def kinematics(self, arm):
        raise NotImplementedError

    def time_s(self) -> float:
        return self.clock

    def capture(self, cameras=None):
        self.clock += 0.1
        out = {}
        for c in cameras or self._spec.cameras:
            if c == "head":
                pose = HEAD_POSE
            else:
                arm = next(a for a in self._spec.arms if a.wrist_camera == c)
                p = self.tcp[arm.name].position_m
                pose = look_at(p + [0.0, 0.0, 0.02], p + [0.0, 0.0, -1.0])
            out[c] = render(
                self.objects, pose, self.size_px, self.size_px, name=c, stamp_s=self.clock
            )
        return out

    def joint_state(self, arm):
        return JointState(
            tuple(f"{arm}_j{j}" for j in range(6)),
            np.zeros(6),
            np.zeros(6),
            np.zeros(6),
            self.clock,
        )

    def ee_pose(self, arm):
        return self.tcp[arm]

    def gripper(self, arm):
        return GripperState(
            self.opening[arm],
            self.opening[arm],
            5.0 if self.holding[arm] else 0.0,
            self.holding[arm],
            self.clock,
        )

    def contact_force_n(self, arm):
        return 0.0

    def servo(self, q_targets, duration_s, guard):
        raise NotImplementedError

    def command_gripper(self, arm, opening_m):
        self.opening[arm] = opening_m
        return opening_m

    def estop(self, reason=""):
        pass

    def reset_estop(self):
        pass

    @property
    def estopped(self):
        return False
