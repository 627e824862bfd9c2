"""Measurement calls: object geometry, image points and displacement (pad contact and release:
:mod:`captain_ros.perception.inspect`).

Geometry comes from the detection's back-projected mask points; other cameras of the same
observation (e.g. the wrist camera) add the points they see inside the detection's box when their
colour matches, which completes faces the first camera cannot see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.result import FailureCategory, Result
from captain_ros.perception.camera import backproject_pixels, valid_depth
from captain_ros.perception.fitting import (
    RESTING_TOL_M,
    ObjectGeometry,
    _rot,
    fit_geometry,
    inside_footprint,
)
from captain_ros.perception.guard import fmt, guarded

if TYPE_CHECKING:
    from captain_ros.backends.base import Backend
    from captain_ros.perception.store import Detection, Observation

MERGE_MARGIN_M = 0.005
MERGE_MAX_GROWTH_M = 0.012
HELD_TOL_M = 0.02
COVERED_SUPPORT_MARGIN_M = 0.004
"""A support whose visible centre lies within this outside an object's footprint is under it [m]."""


def rests_on(geom: ObjectGeometry, support: ObjectGeometry) -> bool:
    """Whether ``geom``'s bottom sits on ``support``'s top with the two stacked in xy.

    Stacked: ``geom``'s centre lies over the support's footprint, or the support's fitted centre
    lies under ``geom``'s footprint (within ``COVERED_SUPPORT_MARGIN_M``). The second case is
    the support whose top face ``geom`` itself covers (a cube on a same-sized cube): the camera
    sees only the support's side faces, so its fit is a sliver of footprint along the visible
    edge, centred up to half a side off the true centre, and a centre-in-footprint test alone
    reports a cube sitting squarely on it as "not resting".
    """
    if abs(geom.bottom_z_m - support.top_z_m) >= 1.5 * RESTING_TOL_M:
        return False
    return bool(
        inside_footprint(geom.center_m[:2], support)[0]
        or inside_footprint(support.center_m[:2], geom, -COVERED_SUPPORT_MARGIN_M)[0]
    )


def _chroma(rgb: np.ndarray) -> np.ndarray:
    f = np.asarray(rgb, dtype=float) + 4.0
    return f / f.sum(axis=-1, keepdims=True)


def _r(v: Any, nd: int = 4) -> list[float]:
    return [round(float(x), nd) for x in np.asarray(v).reshape(-1)]


def solid_samples(geom: ObjectGeometry, step_m: float = 0.004) -> np.ndarray:
    """World points filling the fitted box or cylinder on a grid of ``step_m`` [m]."""
    half = geom.extents_m / 2
    axes = [np.linspace(-h, h, max(int(2 * h / step_m) + 1, 2)) for h in half]
    g = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    if geom.shape == "cylinder" and geom.radius_m is not None:
        g = g[np.linalg.norm(g[:, :2], axis=1) <= geom.radius_m + 1e-9]
    g[:, :2] = g[:, :2] @ _rot(geom.yaw_rad).T
    return g + geom.center_m


class MeasureMixin:
    """Mixed into PerceptionService."""

    backend: Backend

    # ------------------------------------------------------------------ helpers
    def _other_view_points(self, det: Detection, obs: Observation) -> tuple[np.ndarray, list[str]]:
        g = det.geometry
        target = _chroma(det.rgb)
        robot = self._robot_filter(obs)  # type: ignore[attr-defined]
        extra, used = [], []
        for cam, frame in obs.frames.items():
            if cam == det.camera:
                continue
            pts = self.default_segmenter.points(frame)  # type: ignore[attr-defined]
            local = pts - g.center_m
            local[..., :2] = local[..., :2] @ _rot(g.yaw_rad)
            inside = np.all(np.abs(local) <= g.extents_m / 2 + MERGE_MARGIN_M, axis=-1)
            inside &= pts[..., 2] > det.support_z_m + 0.003
            inside &= np.abs(_chroma(frame.rgb) - target).sum(axis=-1) < 0.08
            sel = pts[inside]
            if len(sel) >= 30:
                sel = sel[~robot(sel)]
            if len(sel) >= 30:
                # balance: another view adds at most as many points as the detection has, so the
                # percentile-based top/bottom are not dominated by one view
                extra.append(sel[:: max(1, int(np.ceil(len(sel) / max(len(det.points_m), 1))))])
                used.append(cam)
        return (np.concatenate(extra) if extra else np.zeros((0, 3))), used

    def object_geometry(
        self, det: Detection, shape: str = "auto"
    ) -> tuple[ObjectGeometry, list[str]]:
        """Fit of a detection, merged with the other cameras of its observation when consistent."""
        obs = self.observations.find(det.handle)  # type: ignore[attr-defined]
        base = fit_geometry(det.points_m, det.support_z_m, shape)
        if obs is None or len(obs.frames) < 2 or not self.merge_views:  # type: ignore[attr-defined]
            return base, [det.camera]
        extra, used = self._other_view_points(det, obs)
        if not len(extra):
            return base, [det.camera]
        merged = fit_geometry(np.concatenate([det.points_m, extra]), det.support_z_m, shape)
        if np.any(merged.extents_m - base.extents_m > MERGE_MAX_GROWTH_M):
            return base, [det.camera]
        return merged, [det.camera, *used]

    def _held_near(self, geom: ObjectGeometry) -> bool:
        for arm in self.backend.spec.arm_names:  # type: ignore[attr-defined]
            if not self.backend.gripper(arm).holding:  # type: ignore[attr-defined]
                continue
            tcp = self.backend.ee_pose(arm).position_m  # type: ignore[attr-defined]
            local = tcp - geom.center_m
            local[:2] = local[:2] @ _rot(geom.yaw_rad)
            if np.all(np.abs(local) <= geom.extents_m / 2 + HELD_TOL_M):
                return True
        return False

    # ------------------------------------------------------------------ calls
    @guarded
    def measure_object_geometry(
        self, obj: Any, destination: Any = None, shape: str = "auto"
    ) -> Result:
        """Gravity-aligned geometry of ``obj`` and, with ``destination``, the xy offset from the
        object's centre to the destination's centre (destination - object) [m]."""
        if shape not in ("auto", "box", "cylinder"):
            raise InvalidArgumentError("shape must be 'auto', 'box' or 'cylinder'")
        det = self.detection(obj)  # type: ignore[attr-defined]
        geom, views = self.object_geometry(det, shape)
        dvalue, dgeom = None, None
        if destination is not None:
            ddet = self.detection(destination)  # type: ignore[attr-defined]
            if ddet.id == det.id:
                raise InvalidArgumentError("destination must be another detection than obj")
            dgeom, _ = self.object_geometry(ddet)
            off = dgeom.center_m[:2] - geom.center_m[:2]
            dvalue = {
                "id": ddet.id,
                "label": ddet.label,
                "center_m": _r(dgeom.center_m),
                "extents_m": _r(dgeom.extents_m),
                "shape": dgeom.shape,
                "radius_m": None if dgeom.radius_m is None else round(dgeom.radius_m, 4),
                "top_z_m": round(dgeom.top_z_m, 4),
                "offset_xy_m": _r(off),
                "distance_xy_m": round(float(np.linalg.norm(off)), 4),
                "object_inside_footprint": bool(inside_footprint(geom.center_m[:2], dgeom)[0]),
            }
        support = "none"
        if geom.bottom_z_m - det.support_z_m < RESTING_TOL_M:
            support = "table"
        elif dgeom is not None and rests_on(geom, dgeom):
            support = "destination"
        else:
            for other in self.detections.values():  # type: ignore[attr-defined]
                if (
                    other.handle == det.handle
                    and other.id != det.id
                    and rests_on(geom, other.geometry)
                ):
                    support = f"object {other.id}"
                    break
        held = self._held_near(geom)
        resting = support != "none" and not held
        value = {
            "object_id": det.id,
            "label": det.label,
            "center_m": _r(geom.center_m),
            "extents_m": _r(geom.extents_m),
            "yaw_rad": round(geom.yaw_rad, 4),
            "shape": geom.shape,
            "radius_m": None if geom.radius_m is None else round(geom.radius_m, 4),
            "footprint_m": [_r(c) for c in geom.footprint_m],
            "top_z_m": round(geom.top_z_m, 4),
            "bottom_z_m": round(geom.bottom_z_m, 4),
            "resting": bool(resting),
            "support": support,
            "held": held,
            "support_z_m": round(det.support_z_m, 4),
            "views": views,
            "handle": det.handle,
            "destination": dvalue,
        }
        self.measurements.append(value)  # type: ignore[attr-defined]
        rec = (
            f"measure {det.id}: c {fmt(geom.center_m)} ext {fmt(geom.extents_m)} {geom.shape} "
            f"yaw {geom.yaw_rad:.2f} top {geom.top_z_m:.3f} "
            f"{'resting(' + support + ')' if resting else ('held' if held else 'not resting')}"
        )
        if dvalue is not None:
            rec += (
                f"; to {dvalue['id']} off ({dvalue['offset_xy_m'][0]:.4f}, "
                f"{dvalue['offset_xy_m'][1]:.4f}) d {dvalue['distance_xy_m']:.4f} m"
            )
        return Result.ok(f"geometry of {det.id}", value, receipt=rec)

    @guarded
    def measure_image_points(self, handle: str, camera: str, points: Any) -> Result:
        """World points [m] of pixels ``[[u, v], ...]`` (``None`` where a pixel has no depth)."""
        obs = self.observations.get(handle)  # type: ignore[attr-defined]
        frame = obs.frame(camera)
        if not isinstance(points, (list, tuple, np.ndarray)) or len(points) == 0:
            raise InvalidArgumentError("points must be a non-empty list of [u, v] pixels")
        if len(points) > 4096:
            raise InvalidArgumentError("at most 4096 points per call")
        out: list[list[float] | None] = []
        valid = valid_depth(frame)
        for i, p in enumerate(points):
            if not isinstance(p, (list, tuple, np.ndarray)) or len(p) != 2:
                raise InvalidArgumentError(f"points[{i}] must be [u, v], got {p!r}")
            u, v = self.pixel(frame, p[0], p[1])  # type: ignore[attr-defined]
            out.append(
                _r(backproject_pixels(frame, np.array([u]), np.array([v]))[0])
                if valid[v, u]
                else None
            )
        n_ok = sum(p is not None for p in out)
        if n_ok == 0:
            return Result.fail(
                FailureCategory.NO_DEPTH,
                "none of the pixels has valid depth; pick pixels on surfaces",
                value={"points_m": out},
            )
        first = next(p for p in out if p is not None)
        return Result.ok(
            f"{n_ok}/{len(out)} points with depth",
            {
                "points_m": out,
                "valid": [p is not None for p in out],
                "handle": handle,
                "camera": camera,
            },
            receipt=f"image points {handle}/{camera}: {n_ok}/{len(out)} valid, first "
            f"{fmt(first)} m",
        )

    @guarded
    def compare_object_observations(self, before_id: Any, after_id: Any) -> Result:
        """Displacement (after - before) [m] and yaw change [rad] between two detections."""
        a = self.detection(before_id)  # type: ignore[attr-defined]
        b = self.detection(after_id)  # type: ignore[attr-defined]
        ga, _ = self.object_geometry(a)
        gb, _ = self.object_geometry(b)
        d = gb.center_m - ga.center_m
        dyaw = float((gb.yaw_rad - ga.yaw_rad + np.pi / 4) % (np.pi / 2) - np.pi / 4)
        if "cylinder" in (ga.shape, gb.shape):
            dyaw = 0.0
        value = {
            "before_id": a.id,
            "after_id": b.id,
            "displacement_xyz_m": _r(d),
            "displacement_m": round(float(np.linalg.norm(d)), 4),
            "distance_xy_m": round(float(np.linalg.norm(d[:2])), 4),
            "yaw_change_rad": round(dyaw, 4),
            "extents_change_m": _r(gb.extents_m - ga.extents_m),
        }
        return Result.ok(
            f"{a.id} -> {b.id}: moved {np.linalg.norm(d):.4f} m",
            value,
            receipt=f"compare {a.id}->{b.id}: moved {fmt(d, 4)} m "
            f"({np.linalg.norm(d):.4f}), yaw {dyaw:+.3f} rad",
        )
