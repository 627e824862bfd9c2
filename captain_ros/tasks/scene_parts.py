"""MJCF building blocks and randomisation shared by the tasks.

Everything here is deterministic given a ``numpy.random.Generator``: a task draws its layout,
colours, lighting and camera jitter from ``np.random.default_rng(seed)`` in a fixed order, so the
same seed always gives the same :class:`~captain_ros.core.scene.SceneSpec`.

Colours are saturated named colours (the weight-free colour segmenter keys on hue) and task
objects never share a colour name within one scene; the table stays neutral (the backend's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from captain_ros.tasks.workspace import Workspace

#: Named colours (RGB in [0, 1]); hues far apart so colour words segment unambiguously.
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.08, 0.08),
    "green": (0.10, 0.65, 0.15),
    "blue": (0.10, 0.25, 0.90),
    "yellow": (0.95, 0.85, 0.05),
    "purple": (0.55, 0.12, 0.75),
    "orange": (0.98, 0.50, 0.05),
    "cyan": (0.05, 0.80, 0.85),
    "magenta": (0.90, 0.10, 0.60),
}

#: Friction/contact settings of graspable objects (sliding, torsional, rolling; condim 4).
GRASP_FRICTION = "1.2 0.01 0.0002"


@dataclass(frozen=True)
class Material:
    """A randomised object material: named colour with shade jitter, specular and shininess."""

    name: str
    colour: str
    rgba: tuple[float, float, float, float]
    specular: float
    shininess: float

    def xml(self) -> str:
        r, g, b, a = self.rgba
        return (
            f'<material name="{self.name}" rgba="{r:.4f} {g:.4f} {b:.4f} {a:.1f}" '
            f'specular="{self.specular:.3f}" shininess="{self.shininess:.3f}"/>'
        )


def sample_material(rng: np.random.Generator, name: str, colour: str) -> Material:
    """Colour ``colour`` with its brightness jittered by +-12 % and random gloss."""
    base = np.asarray(COLOURS[colour])
    scale = rng.uniform(0.88, 1.12)
    rgb = np.clip(base * scale, 0.0, 1.0)
    return Material(
        name,
        colour,
        (float(rgb[0]), float(rgb[1]), float(rgb[2]), 1.0),
        specular=float(rng.uniform(0.05, 0.5)),
        shininess=float(rng.uniform(0.1, 0.7)),
    )


def grey_material(
    rng: np.random.Generator, name: str, lo: float = 0.55, hi: float = 0.8
) -> Material:
    """A neutral (unsaturated) material for fixtures such as cabinets and hole blocks."""
    v = float(rng.uniform(lo, hi))
    return Material(
        name,
        "grey",
        (v, v, v * 0.97, 1.0),
        specular=float(rng.uniform(0.05, 0.3)),
        shininess=float(rng.uniform(0.1, 0.5)),
    )


def _fmt(v: Sequence[float]) -> str:
    return " ".join(f"{float(x):.5f}" for x in v)


def yaw_quat(yaw_rad: float) -> tuple[float, float, float, float]:
    """Quaternion (w, x, y, z) of a rotation by ``yaw_rad`` about world z."""
    return (float(np.cos(yaw_rad / 2)), 0.0, 0.0, float(np.sin(yaw_rad / 2)))


def free_box(
    name: str,
    pos_m: Sequence[float],
    half_m: Sequence[float],
    material: str,
    mass_kg: float,
    yaw_rad: float = 0.0,
) -> str:
    """A free box body ``name`` (geom ``{name}_geom``, joint ``{name}_free``) resting at ``pos_m``."""
    return (
        f'<body name="{name}" pos="{_fmt(pos_m)}" quat="{_fmt(yaw_quat(yaw_rad))}">'
        f'<freejoint name="{name}_free"/>'
        f'<geom name="{name}_geom" type="box" size="{_fmt(half_m)}" material="{material}" '
        f'mass="{mass_kg:.4f}" friction="{GRASP_FRICTION}" condim="4"/></body>'
    )


def free_cylinder(
    name: str,
    pos_m: Sequence[float],
    radius_m: float,
    half_height_m: float,
    material: str,
    mass_kg: float,
) -> str:
    """A free upright cylinder body ``name`` (geom ``{name}_geom``, joint ``{name}_free``)."""
    return (
        f'<body name="{name}" pos="{_fmt(pos_m)}"><freejoint name="{name}_free"/>'
        f'<geom name="{name}_geom" type="cylinder" size="{radius_m:.5f} {half_height_m:.5f}" '
        f'material="{material}" mass="{mass_kg:.4f}" friction="{GRASP_FRICTION}" condim="4"/></body>'
    )


def sample_yaw(rng: np.random.Generator, max_rad: float = np.pi / 4) -> float:
    """Yaw in [-max_rad, max_rad] (cubes are 4-fold symmetric, so +-45 deg covers all grasps)."""
    return float(rng.uniform(-max_rad, max_rad))


class Placer:
    """Rejection sampler of non-overlapping object positions on the table.

    Positions are drawn uniformly in an annular sector around the arm base (radius ``r_min_m`` ..
    ``r_max_m``, bearing within ``+-bearing_rad`` of the arm's forward axis), which keeps every
    object within the PiPER's top-down reach while spreading layouts widely (per-object position
    standard deviation of about 0.12-0.15 m over seeds).
    """

    def __init__(self, rng: np.random.Generator, ws: Workspace, arm: str | None = None) -> None:
        self.rng = rng
        self.ws = ws
        self.arm = arm
        self.placed: list[tuple[np.ndarray, float]] = []

    def sample_xy(
        self,
        radius_m: float,
        r_min_m: float | None = None,
        r_max_m: float | None = None,
        bearing_rad: float | None = None,
        clearance_m: float = 0.05,
        box: tuple[float, float, float, float] | None = None,
    ) -> np.ndarray:
        """A position [m] whose disc of ``radius_m`` keeps ``clearance_m`` from every placed disc.

        ``box`` = (x_min, x_max, y_min, y_max) samples uniformly in a world-frame rectangle instead.
        """
        r_lo = self.ws.reach_min_m if r_min_m is None else r_min_m
        r_hi = self.ws.reach_max_m if r_max_m is None else r_max_m
        bearing = self.ws.bearing_rad if bearing_rad is None else bearing_rad
        base_xy, heading = self.ws.arm_base_xy_heading(self.arm)
        for _ in range(2000):
            if box is not None:
                xy = np.array([self.rng.uniform(box[0], box[1]), self.rng.uniform(box[2], box[3])])
            else:
                r = np.sqrt(self.rng.uniform(r_lo**2, r_hi**2))  # uniform in area
                th = heading + self.rng.uniform(-bearing, bearing)
                xy = base_xy + r * np.array([np.cos(th), np.sin(th)])
            if all(np.linalg.norm(xy - p) >= radius_m + q + clearance_m for p, q in self.placed):
                self.placed.append((xy, radius_m))
                return xy
        raise RuntimeError("Placer: could not place object without overlap (layout too crowded)")

    def reserve(self, xy: Sequence[float] | np.ndarray, radius_m: float) -> None:
        """Mark a disc as occupied (fixtures placed by hand)."""
        self.placed.append((np.asarray(xy, dtype=float), radius_m))


@dataclass(frozen=True)
class Environment:
    """Lighting and camera randomisation of one scene."""

    light_diffuse: tuple[float, float, float]
    light_pos_m: tuple[float, float, float]
    camera_jitter_m: np.ndarray
    camera_jitter_rad: np.ndarray


def sample_environment(rng: np.random.Generator) -> Environment:
    """Light brightness/tint and position, head-camera pose jitter (+-2 cm, +-2 deg)."""
    level = rng.uniform(0.55, 1.0)
    tint = rng.uniform(0.92, 1.0, size=3)
    diffuse = tuple(float(v) for v in np.clip(level * tint, 0.0, 1.0))
    light_pos = (
        float(rng.uniform(-0.5, 0.8)),
        float(rng.uniform(-0.6, 0.6)),
        float(rng.uniform(1.6, 2.4)),
    )
    return Environment(
        light_diffuse=(diffuse[0], diffuse[1], diffuse[2]),
        light_pos_m=light_pos,
        camera_jitter_m=rng.uniform(-0.02, 0.02, size=3),
        camera_jitter_rad=rng.uniform(-np.deg2rad(2.0), np.deg2rad(2.0), size=3),
    )


def distinct_colours(rng: np.random.Generator, n: int, exclude: Sequence[str] = ()) -> list[str]:
    """``n`` distinct colour names, none of them in ``exclude``."""
    pool = [c for c in COLOURS if c not in exclude]
    idx = rng.permutation(len(pool))[:n]
    return [pool[i] for i in idx]
