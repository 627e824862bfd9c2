"""Analytic RGB-D rendering for the kinematic fake rig (numpy ray casting of boxes on a table).

Pinhole cameras with a 60 deg vertical field of view; optical frames x right, y down, z forward.
Depth is metric z-depth; the segmentation image holds object index + 1 (0 = table/background).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from captain_ros.backends.fake_scene import FakeBox
from captain_ros.core.types import CameraFrame

BACKGROUND_RGB = np.array([70.0, 70.0, 78.0])
TABLE_RGB = np.array([150.0, 120.0, 90.0])
LIGHT_DIR = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
_RAYS: dict[tuple[int, int], np.ndarray] = {}


def intrinsics(height: int, width: int) -> np.ndarray:
    """Pinhole matrix K [px] with a 60 deg vertical field of view."""
    f = (height / 2) / math.tan(math.radians(30.0))
    return np.array([[f, 0.0, (width - 1) / 2], [0.0, f, (height - 1) / 2], [0.0, 0.0, 1.0]])


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """World pose (4x4) of an optical frame at ``eye`` looking at ``target`` (image up ~ world z)."""
    fwd = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    t = np.eye(4)
    t[:3, 0], t[:3, 1], t[:3, 2], t[:3, 3] = right, down, fwd, eye
    return t


def camera_rays(height: int, width: int) -> np.ndarray:
    """(H*W, 3) ray directions in the optical frame with z = 1 (so ray parameter = z-depth)."""
    key = (height, width)
    if key not in _RAYS:
        k = intrinsics(height, width)
        v, u = np.mgrid[0:height, 0:width].astype(float)
        _RAYS[key] = np.stack([(u - k[0, 2]) / k[0, 0], (v - k[1, 2]) / k[1, 1], np.ones_like(u)], -1).reshape(-1, 3)
    return _RAYS[key]


def pixels_of(box: FakeBox, pose: np.ndarray, k: np.ndarray, h: int, w: int) -> np.ndarray | None:
    """Flat pixel indices inside the box's projected bounding rectangle (None = all pixels)."""
    cam = (box.corners() - pose[:3, 3]) @ pose[:3, :3]
    if np.any(cam[:, 2] < 0.01):
        return None
    u = k[0, 0] * cam[:, 0] / cam[:, 2] + k[0, 2]
    v = k[1, 1] * cam[:, 1] / cam[:, 2] + k[1, 2]
    u0, u1 = max(0, int(np.floor(u.min())) - 1), min(w - 1, int(np.ceil(u.max())) + 1)
    v0, v1 = max(0, int(np.floor(v.min())) - 1), min(h - 1, int(np.ceil(v.max())) + 1)
    if u0 > u1 or v0 > v1:
        return np.zeros(0, dtype=np.int64)
    vv, uu = np.mgrid[v0:v1 + 1, u0:u1 + 1]
    return (vv * w + uu).reshape(-1)


def render(camera: str, pose: np.ndarray, size: tuple[int, int], boxes: Sequence[FakeBox],
           table_min_xy: np.ndarray, table_max_xy: np.ndarray, table_top_z_m: float, stamp_s: float) -> CameraFrame:
    """One RGB-D frame of ``boxes`` on a table seen from ``pose`` (optical frame in the world)."""
    h, w = size
    k = intrinsics(h, w)
    dirs = camera_rays(h, w) @ pose[:3, :3].T
    origin = pose[:3, 3]
    rgb = np.tile(BACKGROUND_RGB, (h * w, 1))
    seg = np.zeros(h * w, dtype=np.int32)
    with np.errstate(divide="ignore", invalid="ignore"):  # the table top: a bounded horizontal plane
        t_tab = (table_top_z_m - origin[2]) / dirs[:, 2]
    xy = origin[:2] + t_tab[:, None] * dirs[:, :2]
    on = (t_tab > 1e-6) & np.all((xy >= table_min_xy) & (xy <= table_max_xy), axis=1)
    depth = np.where(on, t_tab, np.inf)
    rgb[on] = TABLE_RGB * (0.45 + 0.55 * LIGHT_DIR[2])
    for idx, box in enumerate(boxes, start=1):
        sel = pixels_of(box, pose, k, h, w)
        if sel is None:
            sel = np.arange(h * w)
        if sel.size == 0:
            continue
        o = (origin - box.center_m) @ box.rotation
        d = dirs[sel] @ box.rotation
        half = box.size_m / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            t1 = (-half - o) / d
            t2 = (half - o) / d
        tnear = np.nan_to_num(np.minimum(t1, t2), nan=-np.inf)
        tfar = np.nan_to_num(np.maximum(t1, t2), nan=np.inf)
        t_in, t_out = tnear.max(axis=1), tfar.min(axis=1)
        hit = (t_out >= t_in) & (t_in > 1e-6) & (t_in < depth[sel])
        if not np.any(hit):
            continue
        pix = sel[hit]
        axis = np.argmax(tnear[hit], axis=1)
        rows = np.arange(axis.size)
        normal_local = np.zeros((axis.size, 3))
        normal_local[rows, axis] = -np.sign(d[hit][rows, axis])
        shade = 0.45 + 0.55 * np.clip((normal_local @ box.rotation.T) @ LIGHT_DIR, 0.0, 1.0)
        depth[pix] = t_in[hit]
        rgb[pix] = np.asarray(box.rgb, dtype=float) * shade[:, None]
        seg[pix] = idx
    depth_img = np.where(np.isfinite(depth), depth, 0.0).astype(np.float32).reshape(h, w)
    return CameraFrame(camera, np.clip(rgb, 0, 255).astype(np.uint8).reshape(h, w, 3), depth_img,
                       k, pose, stamp_s, seg.reshape(h, w))
