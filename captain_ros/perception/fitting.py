"""Gravity-aligned shape fits of back-projected object points.

A single view sees a box's top face and one or two sides, so a full oriented-box fit is poor; a
gravity-aligned box with a yaw-only fit (minimum-area rectangle of the points' xy footprint) plus
the z range is accurate. Cylinders are detected by how much of that rectangle their footprint
fills (a disc fills pi/4) and refit with a least-squares circle. Rectangle and hull come from
opencv (``cv2.minAreaRect``, ``cv2.convexHull``): same results as the former hand-written
rotating-edges code, ~8x faster (docs/libraries.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from captain_ros.core.errors import InvalidArgumentError

RESTING_TOL_M = 0.01
"""A bottom within this of a support surface rests on it [m]."""
SNAP_TOL_M = 0.006
"""A lowest visible point within this of the support plane means the object stands on it: the
bottom snaps to the plane (the last few millimetres above the table are removed with the table) [m]."""
CYLINDER_FILL = 0.9
"""Footprint hull area / rectangle area below this is a cylinder in ``shape="auto"`` [-]."""


@dataclass(frozen=True)
class ObjectGeometry:
    """A gravity-aligned object fit in the world frame.

    Attributes:
        center_m: Box centre (x, y, z) [m]; z halfway between bottom and top.
        extents_m: Full sizes (along the yawed x, along the yawed y, z) [m].
        yaw_rad: Rotation of the box about world z, in [-pi/4, pi/4) [rad].
        shape: ``"box"`` or ``"cylinder"``.
        radius_m: Cylinder radius [m] (``None`` for boxes).
        footprint_m: (4, 2) xy corners of the footprint rectangle [m], counter-clockwise.
        top_z_m / bottom_z_m: Heights of the top and bottom [m].
        n_points: Number of points fitted.
    """

    center_m: np.ndarray
    extents_m: np.ndarray
    yaw_rad: float
    shape: str
    radius_m: float | None
    footprint_m: np.ndarray
    top_z_m: float
    bottom_z_m: float
    n_points: int

    def to_dict(self) -> dict:
        return {
            "center_m": [float(x) for x in self.center_m],
            "extents_m": [float(x) for x in self.extents_m],
            "yaw_rad": float(self.yaw_rad),
            "shape": self.shape,
            "radius_m": None if self.radius_m is None else float(self.radius_m),
            "footprint_m": [[float(a), float(b)] for a, b in self.footprint_m],
            "top_z_m": float(self.top_z_m),
            "bottom_z_m": float(self.bottom_z_m),
        }


def _rot(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s], [s, c]])


def _centred_f32(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points as opencv needs them (float32), centred first so world coordinates keep their
    precision (float32 near 1 m resolves ~0.1 um; centred, far better)."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    origin = xy.mean(axis=0) if len(xy) else np.zeros(2)
    return (xy - origin).astype(np.float32), origin


def hull_vertices(xy: np.ndarray) -> np.ndarray:
    """The convex hull's vertices (M, 2) of xy points (N, 2) [m], in the input precision."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    if len(xy) < 3:
        return xy
    pts, _ = _centred_f32(xy)
    idx = cv2.convexHull(pts, returnPoints=False)
    return xy[np.asarray(idx, dtype=int).reshape(-1)]


def min_area_rectangle(xy: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float]:
    """Yaw [rad] in [-pi/4, pi/4), centre (2,), sizes (2,) of the smallest enclosing rectangle,
    and the hull area [m^2] (``cv2.minAreaRect``, ``cv2.contourArea`` of ``cv2.convexHull``)."""
    pts, origin = _centred_f32(xy)
    if len(pts) == 0:
        return 0.0, origin, np.zeros(2), 0.0
    (cx, cy), (w, h), angle = cv2.minAreaRect(pts)
    area = float(cv2.contourArea(cv2.convexHull(pts))) if len(pts) >= 3 else 0.0
    yaw, size = float(np.radians(angle)), np.array([w, h], dtype=float)
    while yaw >= np.pi / 4:
        yaw, size = yaw - np.pi / 2, size[::-1]
    while yaw < -np.pi / 4:
        yaw, size = yaw + np.pi / 2, size[::-1]
    return yaw, np.array([cx, cy], dtype=float) + origin, size, area


def fit_circle(xy: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares (Kasa) circle: centre (2,) and radius [m]."""
    a = np.column_stack([2 * xy, np.ones(len(xy))])
    b = (xy**2).sum(axis=1)
    sol, *_ = np.linalg.lstsq(a, b, rcond=None)
    centre = sol[:2]
    return centre, float(np.sqrt(max(sol[2] + centre @ centre, 0.0)))


def _top_is_disc(pts: np.ndarray, top_z_m: float, rect_area_m2: float) -> bool:
    """The top face is seen (its hull covers at least half the footprint rectangle) and fills its
    own rectangle like a disc does. A cube whose top is hidden (another cube on it) shows only an
    L of side faces, which also fills little of its rectangle but is no cylinder."""
    band = max(0.004, 0.1 * (top_z_m - float(np.min(pts[:, 2]))))
    top = pts[pts[:, 2] > top_z_m - band, :2]
    if len(top) < 10:
        return False
    _, _, size, area = min_area_rectangle(top)
    return area >= 0.5 * rect_area_m2 and area / max(size[0] * size[1], 1e-12) < CYLINDER_FILL


def fit_geometry(
    points_m: np.ndarray,
    support_z_m: float | None = None,
    shape: str = "auto",
    pixel_size_m: float = 0.0,
) -> ObjectGeometry:
    """Fit a gravity-aligned box or vertical cylinder to world points (N, 3) [m].

    Args:
        points_m: Object surface points in the world frame [m].
        support_z_m: Height of the plane the object may rest on [m]; a bottom within
            ``SNAP_TOL_M`` of it snaps to it (the lowest side pixels are hidden by the margin).
        shape: ``"auto"``, ``"box"`` or ``"cylinder"``.
        pixel_size_m: Footprint of one pixel on the object [m]; half of it is added on each side,
            because the outermost samples are pixel centres, not the object's edge.
    """
    pts = np.asarray(points_m, dtype=float).reshape(-1, 3)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    if len(pts) < 5:
        raise InvalidArgumentError(
            f"need at least 5 points with depth to fit a shape, got {len(pts)}"
        )
    if shape not in ("auto", "box", "cylinder"):
        raise InvalidArgumentError(f"shape must be auto, box or cylinder, got {shape!r}")
    top = float(np.percentile(pts[:, 2], 99.5))
    bottom = float(np.percentile(pts[:, 2], 0.5))
    if support_z_m is not None and np.isfinite(support_z_m) and bottom - support_z_m < SNAP_TOL_M:
        bottom = min(bottom, float(support_z_m))
    xy = pts[:, :2]
    yaw, centre, size, hull_area = min_area_rectangle(xy)
    fill = hull_area / max(size[0] * size[1], 1e-12)
    pad = float(pixel_size_m)
    is_cyl = shape == "cylinder" or (
        shape == "auto"
        and fill < CYLINDER_FILL
        and len(xy) > 20
        and _top_is_disc(pts, top, size[0] * size[1])
    )
    if is_cyl:
        c, r = fit_circle(hull_vertices(xy))
        if r > float(max(size)) or float(np.linalg.norm(c - centre)) > float(max(size)):
            # a hull of nearly collinear points (a flat face seen edge-on): the least-squares
            # circle runs off to a radius of metres (a 147 m "cabinet" was measured so); a seen
            # arc of 60 deg or more has a chord of at least the radius, so this bound keeps every
            # real cylinder. ``auto`` falls back to the box; a requested cylinder spans the points
            is_cyl = shape == "cylinder"
            c, r = centre, float(max(size)) / 2
    if is_cyl:
        r += pad / 2
        centre, size, yaw = c, np.array([2 * r, 2 * r]), 0.0
    else:
        size = size + pad
    half = size / 2
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * half @ _rot(yaw).T + centre
    return ObjectGeometry(
        center_m=np.array([centre[0], centre[1], (top + bottom) / 2]),
        extents_m=np.array([size[0], size[1], top - bottom]),
        yaw_rad=yaw,
        shape="cylinder" if is_cyl else "box",
        radius_m=float(size[0] / 2) if is_cyl else None,
        footprint_m=corners,
        top_z_m=top,
        bottom_z_m=bottom,
        n_points=len(pts),
    )


def inside_footprint(xy: np.ndarray, geom: ObjectGeometry, margin_m: float = 0.0) -> np.ndarray:
    """Whether xy points (N, 2) lie inside the footprint shrunk by ``margin_m`` [m]."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    local = (xy - geom.center_m[:2]) @ _rot(geom.yaw_rad)
    if geom.shape == "cylinder" and geom.radius_m is not None:
        return np.linalg.norm(local, axis=1) <= geom.radius_m - margin_m
    half = geom.extents_m[:2] / 2 - margin_m
    return np.all(np.abs(local) <= half, axis=1)
