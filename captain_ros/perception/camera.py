"""Pinhole camera maths: back-projection of pixels with metric depth, projection of world points.

Conventions: pixel ``(u, v)`` is column ``u`` and row ``v`` (0-based) and denotes the pixel's
centre, so an ideal camera has ``cx = (W - 1) / 2`` (the MuJoCo backend's convention);
``PIXEL_CENTER_OFFSET`` would shift that for intrinsics given with ``cx = W / 2``.
Depth is metric z-depth along the optical axis [m]; 0 or NaN means no depth. ``world_from_camera``
is the pose of the optical frame (x right, y down, z forward).
"""

from __future__ import annotations

import numpy as np

from captain_ros.core.types import CameraFrame

PIXEL_CENTER_OFFSET = 0.0


def valid_depth(frame: CameraFrame) -> np.ndarray:
    """(H, W) bool: pixels with a finite, positive depth."""
    d = frame.depth_m
    return np.isfinite(d) & (d > 0)


def backproject_pixels(
    frame: CameraFrame, u: np.ndarray, v: np.ndarray, depth_m: np.ndarray | None = None
) -> np.ndarray:
    """World points (N, 3) [m] of integer pixels ``u`` (columns), ``v`` (rows).

    ``depth_m`` defaults to the frame's depth at those pixels (no validity check here).
    """
    u = np.asarray(u)
    v = np.asarray(v)
    z = frame.depth_m[v.astype(int), u.astype(int)] if depth_m is None else np.asarray(depth_m)
    k = np.asarray(frame.intrinsics, dtype=float)
    x = (u + PIXEL_CENTER_OFFSET - k[0, 2]) / k[0, 0] * z
    y = (v + PIXEL_CENTER_OFFSET - k[1, 2]) / k[1, 1] * z
    cam = np.stack([x, y, z], axis=-1).reshape(-1, 3)
    t = np.asarray(frame.world_from_camera, dtype=float)
    return cam @ t[:3, :3].T + t[:3, 3]


def project_points(frame: CameraFrame, points_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Continuous pixel coordinates (N, 2) as ``(u, v)`` pixel indices and depth (N,) [m].

    A returned ``(u, v)`` rounds to the pixel whose centre it is nearest to.
    """
    pts = np.asarray(points_m, dtype=float).reshape(-1, 3)
    t = np.asarray(frame.world_from_camera, dtype=float)
    cam = (pts - t[:3, 3]) @ t[:3, :3]
    k = np.asarray(frame.intrinsics, dtype=float)
    z = cam[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = k[0, 0] * cam[:, 0] / z + k[0, 2] - PIXEL_CENTER_OFFSET
        v = k[1, 1] * cam[:, 1] / z + k[1, 2] - PIXEL_CENTER_OFFSET
    return np.stack([u, v], axis=-1), z


def world_points_image(frame: CameraFrame) -> np.ndarray:
    """(H, W, 3) world coordinates of every pixel [m]; NaN where depth is missing."""
    h, w = frame.depth_m.shape
    k = np.asarray(frame.intrinsics, dtype=float)
    t = np.asarray(frame.world_from_camera, dtype=float)
    x = ((np.arange(w) + PIXEL_CENTER_OFFSET - k[0, 2]) / k[0, 0]).astype(np.float32)
    y = ((np.arange(h) + PIXEL_CENTER_OFFSET - k[1, 2]) / k[1, 1]).astype(np.float32)
    r = t[:3, :3].astype(np.float32)
    # world ray per pixel (optical z = 1) = x * r[:, 0] + y * r[:, 1] + r[:, 2]
    rays = x[None, :, None] * r[:, 0] + y[:, None, None] * r[:, 1] + r[:, 2]
    depth = np.where(valid_depth(frame), frame.depth_m, np.nan).astype(np.float32)
    return (depth[..., None] * rays + t[:3, 3].astype(np.float32)).astype(np.float64)


def mask_points(frame: CameraFrame, mask: np.ndarray, max_points: int | None = None) -> np.ndarray:
    """World points (N, 3) [m] of the mask pixels that have depth (optionally subsampled evenly)."""
    vv, uu = np.nonzero(np.asarray(mask, dtype=bool) & valid_depth(frame))
    if max_points is not None and uu.size > max_points:
        idx = np.linspace(0, uu.size - 1, max_points).astype(int)
        uu, vv = uu[idx], vv[idx]
    return backproject_pixels(frame, uu, vv)


def intrinsics_from_fovy(fovy_deg: float, width_px: int, height_px: int) -> np.ndarray:
    """Pinhole K of a camera with vertical field of view ``fovy_deg`` [deg] (square pixels)."""
    f = 0.5 * height_px / np.tan(np.deg2rad(fovy_deg) / 2)
    return np.array([[f, 0.0, (width_px - 1) / 2], [0.0, f, (height_px - 1) / 2], [0.0, 0.0, 1.0]])
