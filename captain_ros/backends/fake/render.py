"""Analytic RGB-D rendering for the kinematic fake rig (ray casting of boxes on a table).

Pinhole cameras with a 60 deg vertical field of view; optical frames x right, y down, z forward.
Depth is metric z-depth; the segmentation image holds object index + 1 (0 = table/background).
The ray-box and ray-plane maths are :mod:`captain_ros.backends.fake.raycast`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from captain_ros.backends.fake.raycast import (
    camera_rays,
    hit_box,
    hit_rectangle,
    intrinsics,
    look_at,
    shade,
)
from captain_ros.backends.fake.scene import FakeBox
from captain_ros.core.types import CameraFrame

__all__ = ["intrinsics", "look_at", "pixels_of", "render"]

BACKGROUND_RGB = np.array([70.0, 70.0, 78.0])
TABLE_RGB = np.array([150.0, 120.0, 90.0])


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
    vv, uu = np.mgrid[v0 : v1 + 1, u0 : u1 + 1]
    return (vv * w + uu).reshape(-1)


def render(
    camera: str,
    pose: np.ndarray,
    size: tuple[int, int],
    boxes: Sequence[FakeBox],
    table_min_xy: np.ndarray,
    table_max_xy: np.ndarray,
    table_top_z_m: float,
    stamp_s: float,
) -> CameraFrame:
    """One RGB-D frame of ``boxes`` on a table seen from ``pose`` (optical frame in the world)."""
    h, w = size
    k = intrinsics(h, w)
    dirs = camera_rays(h, w) @ pose[:3, :3].T
    origin = pose[:3, 3]
    rgb = np.tile(BACKGROUND_RGB, (h * w, 1))
    seg = np.zeros(h * w, dtype=np.int32)
    depth = hit_rectangle(origin, dirs, table_top_z_m, table_min_xy, table_max_xy)
    rgb[np.isfinite(depth)] = TABLE_RGB * shade(np.array([[0.0, 0.0, 1.0]]))[0]
    for idx, box in enumerate(boxes, start=1):
        sel = pixels_of(box, pose, k, h, w)
        if sel is None:
            sel = np.arange(h * w)
        if sel.size == 0:
            continue
        t, normals = hit_box(origin, dirs[sel], box.center_m, box.rotation, box.size_m)
        hit = t < depth[sel]
        if not np.any(hit):
            continue
        pix = sel[hit]
        depth[pix] = t[hit]
        rgb[pix] = np.asarray(box.rgb, dtype=float) * shade(normals[hit])[:, None]
        seg[pix] = idx
    depth_img = np.where(np.isfinite(depth), depth, 0.0).astype(np.float32).reshape(h, w)
    return CameraFrame(
        camera,
        np.clip(rgb, 0, 255).astype(np.uint8).reshape(h, w, 3),
        depth_img,
        k,
        pose,
        stamp_s,
        seg.reshape(h, w),
    )
