"""Numpy ray casting of boxes, vertical cylinders and horizontal rectangles (pinhole cameras).

The analytic renderer of the kinematic fake rig and the synthetic perception scenes of the tests
share these primitives. Conventions: optical frames x right, y down, z forward; ray directions in
the optical frame have z = 1, so a hit's ray parameter is its metric z-depth.
"""

from __future__ import annotations

import math

import numpy as np

LIGHT_DIR = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
_RAYS: dict[tuple[int, int, float], np.ndarray] = {}


def intrinsics(height: int, width: int, fovy_deg: float = 60.0) -> np.ndarray:
    """Pinhole matrix K [px] with the given vertical field of view [deg] (ideal centre)."""
    f = (height / 2) / math.tan(math.radians(fovy_deg) / 2)
    return np.array([[f, 0.0, (width - 1) / 2], [0.0, f, (height - 1) / 2], [0.0, 0.0, 1.0]])


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """World pose (4x4) of an optical frame at ``eye`` looking at ``target`` (image up ~ world z;
    looking straight down, image up ~ world x)."""
    eye, target = np.asarray(eye, dtype=float), np.asarray(target, dtype=float)
    fwd = (target - eye) / np.linalg.norm(target - eye)
    up = np.array([0.0, 0.0, 1.0]) if abs(fwd[2]) < 0.99 else np.array([1.0, 0.0, 0.0])
    right = np.cross(fwd, up)
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    t = np.eye(4)
    t[:3, 0], t[:3, 1], t[:3, 2], t[:3, 3] = right, down, fwd, eye
    return t


def camera_rays(height: int, width: int, fovy_deg: float = 60.0) -> np.ndarray:
    """(H*W, 3) ray directions in the optical frame with z = 1 (cached per size)."""
    key = (height, width, fovy_deg)
    if key not in _RAYS:
        k = intrinsics(height, width, fovy_deg)
        v, u = np.mgrid[0:height, 0:width].astype(float)
        _RAYS[key] = np.stack(
            [(u - k[0, 2]) / k[0, 0], (v - k[1, 2]) / k[1, 1], np.ones_like(u)], -1
        ).reshape(-1, 3)
    return _RAYS[key]


def hit_box(
    origin: np.ndarray,
    dirs: np.ndarray,
    center_m: np.ndarray,
    rotation: np.ndarray,
    size_m: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Entry distance (``inf`` = miss) and world normal of each ray hitting an oriented box
    (slab method in the box frame)."""
    o = (origin - center_m) @ rotation
    d = dirs @ rotation
    half = np.asarray(size_m, dtype=float) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-half - o) / d
        t2 = (half - o) / d
    tnear = np.nan_to_num(np.minimum(t1, t2), nan=-np.inf)
    tfar = np.nan_to_num(np.maximum(t1, t2), nan=np.inf)
    t_in, t_out = tnear.max(axis=1), tfar.min(axis=1)
    hit = (t_out >= t_in) & (t_in > 1e-6)
    axis = np.argmax(tnear, axis=1)
    rows = np.arange(axis.size)
    normal_local = np.zeros((axis.size, 3))
    normal_local[rows, axis] = -np.sign(d[rows, axis])
    return np.where(hit, t_in, np.inf), normal_local @ rotation.T


def hit_cylinder(
    origin: np.ndarray, dirs: np.ndarray, center_m: np.ndarray, radius_m: float, height_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Entry distance and world normal of each ray hitting a vertical cylinder (side or top)."""
    cx, cy, cz = center_m
    z0, z1 = cz - height_m / 2, cz + height_m / 2
    ox, oy = origin[0] - cx, origin[1] - cy
    a = dirs[:, 0] ** 2 + dirs[:, 1] ** 2
    bq = 2 * (ox * dirs[:, 0] + oy * dirs[:, 1])
    cq = ox**2 + oy**2 - radius_m**2
    disc = bq**2 - 4 * a * cq
    with np.errstate(invalid="ignore", divide="ignore"):
        ts = (-bq - np.sqrt(disc)) / (2 * a)
        tt = (z1 - origin[2]) / dirs[:, 2]
    zs = origin[2] + ts * dirs[:, 2]
    side = (disc >= 0) & (ts > 0) & (zs >= z0) & (zs <= z1)
    px, py = ox + tt * dirs[:, 0], oy + tt * dirs[:, 1]
    top = (tt > 0) & (px**2 + py**2 <= radius_m**2)
    t = np.where(side, ts, np.inf)
    t = np.where(top & (tt < t), tt, t)
    n = np.zeros_like(dirs)
    n[:, 0] = ox + t * dirs[:, 0]
    n[:, 1] = oy + t * dirs[:, 1]
    n = np.nan_to_num(n, nan=0.0, posinf=0.0, neginf=0.0)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-9)
    n[top & (tt <= np.where(side, ts, np.inf))] = [0.0, 0.0, 1.0]
    return t, n


def hit_rectangle(
    origin: np.ndarray, dirs: np.ndarray, z_m: float, min_xy: np.ndarray, max_xy: np.ndarray
) -> np.ndarray:
    """Distance of each ray to a horizontal rectangle at height ``z_m`` (``inf`` = miss)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (z_m - origin[2]) / dirs[:, 2]
    xy = origin[:2] + t[:, None] * dirs[:, :2]
    on = (t > 1e-6) & np.all((xy >= min_xy) & (xy <= max_xy), axis=1)
    return np.where(on, t, np.inf)


def shade(normals: np.ndarray) -> np.ndarray:
    """Lambert shading factor in [0.45, 1] of world normals under the fixed light."""
    return 0.45 + 0.55 * np.clip(normals @ LIGHT_DIR, 0.0, 1.0)
