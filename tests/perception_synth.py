"""Analytic RGB-D renderer and a minimal Backend for perception tests (no simulator).

Scenes are gravity-aligned boxes (with yaw) and vertical cylinders on a table top at z = 0;
pixels are ray-cast exactly through pixel centres (cx = (W - 1) / 2, as the MuJoCo backend), colours are Lambert-shaded
so faces of one object differ in brightness, and the id image gives ground-truth masks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core.geometry import Pose
from captain_ros.core.types import ArmSpec, CameraFrame, GripperState, JointState, RobotSpec
from captain_ros.perception.camera import intrinsics_from_fovy

TABLE_RGB = (170, 150, 120)
FLOOR_RGB = (90, 90, 90)
LIGHT = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])


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


def look_at(eye, target) -> np.ndarray:
    """world_from_camera (optical frame: x right, y down, z forward)."""
    eye, target = np.asarray(eye, float), np.asarray(target, float)
    z = target - eye
    z /= np.linalg.norm(z)
    up = np.array([0.0, 0.0, 1.0]) if abs(z[2]) < 0.99 else np.array([1.0, 0.0, 0.0])
    x = np.cross(z, up)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    t = np.eye(4)
    t[:3, :3] = np.column_stack([x, y, z])
    t[:3, 3] = eye
    return t


def _hit_box(o, d, b: Box):
    c, s = np.cos(b.yaw), np.sin(b.yaw)
    r = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    lo = (o - np.asarray(b.center)) @ r
    ld = d @ r
    half = np.asarray(b.size) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-half - lo) / ld
        t2 = (half - lo) / ld
    tmin = np.minimum(t1, t2)
    tmax = np.maximum(t1, t2)
    tn = np.nanmax(tmin, axis=1)
    tf = np.nanmin(tmax, axis=1)
    hit = (tn <= tf) & (tf > 0) & (tn > 0)
    axis = np.nanargmax(tmin, axis=1)
    sign = -np.sign(ld[np.arange(len(ld)), axis])
    n_local = np.zeros_like(d)
    n_local[np.arange(len(d)), axis] = sign
    return np.where(hit, tn, np.inf), n_local @ r.T


def _hit_cyl(o, d, cy: Cylinder):
    cx, cyy, cz = cy.center
    z0, z1 = cz - cy.height / 2, cz + cy.height / 2
    ox, oy = o[0] - cx, o[1] - cyy
    a = d[:, 0] ** 2 + d[:, 1] ** 2
    bq = 2 * (ox * d[:, 0] + oy * d[:, 1])
    cq = ox**2 + oy**2 - cy.radius**2
    disc = bq**2 - 4 * a * cq
    with np.errstate(invalid="ignore", divide="ignore"):
        ts = (-bq - np.sqrt(disc)) / (2 * a)
    zs = o[2] + ts * d[:, 2]
    side = (disc >= 0) & (ts > 0) & (zs >= z0) & (zs <= z1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tt = (z1 - o[2]) / d[:, 2]
    px, py = ox + tt * d[:, 0], oy + tt * d[:, 1]
    top = (tt > 0) & (px**2 + py**2 <= cy.radius**2)
    t = np.where(side, ts, np.inf)
    t = np.where(top & (tt < t), tt, t)
    n = np.zeros_like(d)
    n[:, 0] = ox + t * d[:, 0]
    n[:, 1] = oy + t * d[:, 1]
    n = np.nan_to_num(n, nan=0.0, posinf=0.0, neginf=0.0)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-9)
    is_top = top & (tt <= np.where(side, ts, np.inf))
    n[is_top] = [0, 0, 1]
    return t, n


def render(objects, world_from_camera, width=512, height=512, fovy_deg=58.0, name="head",
           stamp_s=0.0, table=((-0.1, 0.9), (-0.6, 0.6))) -> CameraFrame:
    """Ray-cast an RGB-D frame (with an id image: 0 table/floor, i+1 object i)."""
    k = intrinsics_from_fovy(fovy_deg, width, height)
    vv, uu = np.mgrid[0:height, 0:width]
    dc = np.stack([(uu - k[0, 2]) / k[0, 0], (vv - k[1, 2]) / k[1, 1],
                   np.ones_like(uu, dtype=float)], axis=-1).reshape(-1, 3)
    r = world_from_camera[:3, :3]
    o = world_from_camera[:3, 3]
    d = dc @ r.T
    n_all = np.zeros_like(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        tt = -o[2] / d[:, 2]
    p = o + tt[:, None] * d
    on_table = (tt > 0) & (p[:, 0] >= table[0][0]) & (p[:, 0] <= table[0][1]) & \
        (p[:, 1] >= table[1][0]) & (p[:, 1] <= table[1][1])
    t_best = np.where(on_table, tt, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        tf = (-0.75 - o[2]) / d[:, 2]
    floor = (tf > 0) & ~on_table
    t_best = np.where(floor, tf, t_best)
    ids = np.zeros(len(d), dtype=np.int32)
    n_all[:] = [0, 0, 1]
    rgb = np.where(on_table[:, None], np.array(TABLE_RGB, float), np.array(FLOOR_RGB, float))
    for i, ob in enumerate(objects):
        t, n = _hit_box(o, d, ob) if isinstance(ob, Box) else _hit_cyl(o, d, ob)
        closer = t < t_best
        t_best = np.where(closer, t, t_best)
        ids[closer] = i + 1
        n_all[closer] = n[closer]
        rgb[closer] = ob.rgb
    shade = 0.45 + 0.55 * np.clip(n_all @ LIGHT, 0, 1)
    img = np.clip(rgb * shade[:, None], 0, 255).astype(np.uint8).reshape(height, width, 3)
    depth = np.where(np.isfinite(t_best), t_best, 0.0).astype(np.float32).reshape(height, width)
    return CameraFrame(name, img, depth, k, world_from_camera, stamp_s,
                       ids.reshape(height, width))


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
            arms.append(ArmSpec(n, tuple(f"{n}_j{j}" for j in range(6)), -np.ones(6) * 3,
                                np.ones(6) * 3, np.ones(6), base, 0.65, 0.07,
                                (0.04, 0.02, 0.008), f"{n}_wrist" if self.dual else "wrist"))
            self.tcp.setdefault(n, Pose([0.3, base.position_m[1], 0.35], [0, 0.7071068, 0.7071068, 0]))
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
            out[c] = render(self.objects, pose, self.size_px, self.size_px, name=c,
                            stamp_s=self.clock)
        return out

    def joint_state(self, arm):
        return JointState(tuple(f"{arm}_j{j}" for j in range(6)), np.zeros(6), np.zeros(6),
                          np.zeros(6), self.clock)

    def ee_pose(self, arm):
        return self.tcp[arm]

    def gripper(self, arm):
        return GripperState(self.opening[arm], self.opening[arm], 5.0 if self.holding[arm] else 0.0,
                            self.holding[arm], self.clock)

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
