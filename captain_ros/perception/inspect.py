"""The pads against an object, before the jaw moves: where they would touch it on a grasp
(``inspect_contact_geometry``) and what would happen on letting go over a support
(``inspect_release_geometry``), measured from the cameras.

:class:`InspectMixin` is mixed into :class:`captain_ros.perception.service.PerceptionService`
beside :class:`captain_ros.perception.measure.MeasureMixin`, whose geometry it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.geometry import as_vector, normalize_quat, quat_to_matrix
from captain_ros.core.result import Result
from captain_ros.perception.fitting import (
    fit_geometry,
    inside_footprint,
)
from captain_ros.perception.gripper_model import (
    APPROACH_AXIS,
    JAW_AXIS,
    gripper_points_mask,
    to_tool,
)
from captain_ros.perception.guard import finite_number, guarded
from captain_ros.perception.measure import (
    _r,
    solid_samples,
)

if TYPE_CHECKING:
    from captain_ros.backends.base import Backend
    from captain_ros.perception.fitting import ObjectGeometry
    from captain_ros.perception.store import Detection


class InspectMixin:
    """Mixed into PerceptionService."""

    backend: Backend

    if TYPE_CHECKING:  # provided by MeasureMixin

        def object_geometry(
            self, det: Detection, shape: str = "auto"
        ) -> tuple[ObjectGeometry, list[str]]: ...

    @guarded
    def inspect_contact_geometry(
        self,
        obj: Any,
        position: Any,
        orientation: Any = None,
        jaw_opening_m: Any = None,
        arm: str | None = None,
    ) -> Result:
        """Would both pads contact ``obj`` if the tool were at ``position``/``orientation`` and the
        jaw closed from ``jaw_opening_m`` (default: current opening)? Clearance per pad [m]
        (positive = gap between the pad's inner face and the object, negative = the pad would
        intersect the object on the way down)."""
        det = self.detection(obj)  # type: ignore[attr-defined]
        name = self.resolve_arm(arm)  # type: ignore[attr-defined]
        spec = self.backend.spec.arm(name)  # type: ignore[attr-defined]
        pos = as_vector(position, 3, "position")
        quat = (
            normalize_quat(orientation, "orientation")
            if orientation is not None
            else self.backend.ee_pose(name).quat_wxyz  # type: ignore[attr-defined]
        )
        opening = (
            float(self.backend.gripper(name).opening_m)  # type: ignore[attr-defined]
            if jaw_opening_m is None
            else finite_number(jaw_opening_m, "jaw_opening_m")
        )
        if not 0 <= opening <= spec.jaw_max_opening_m + 1e-6:
            raise InvalidArgumentError(
                f"jaw_opening_m must be in [0, {spec.jaw_max_opening_m:.3f}] m"
            )
        geom, _ = self.object_geometry(det)
        local = to_tool(solid_samples(geom), pos, quat)
        length, width, thick = spec.pad_size_m
        half = opening / 2
        x, y, z = local[:, 0], local[:, JAW_AXIS], local[:, APPROACH_AXIS]
        slab = (np.abs(x) <= width / 2) & (np.abs(z) <= length / 2)
        r = quat_to_matrix(quat)
        corners = np.array(
            [
                [sx * width / 2, sy * (half + thick), sz * length / 2]
                for sx in (-1, 1)
                for sy in (-1, 1)
                for sz in (-1, 1)
            ]
        )
        pad_low = float(np.min((corners[:, [0, JAW_AXIS, APPROACH_AXIS]] @ r.T + pos)[:, 2]))
        support_clear = pad_low - det.support_z_m
        value: dict[str, Any] = {
            "object_id": det.id,
            "arm": name,
            "jaw_opening_m": opening,
            "pad_lowest_z_m": round(pad_low, 4),
            "support_clearance_m": round(support_clear, 4),
        }
        if not slab.any():
            dx = float(
                np.min(np.maximum(np.abs(x) - width / 2, 0) + np.maximum(np.abs(z) - length / 2, 0))
            )
            value |= {
                "both_pads_contact": False,
                "clearance_per_pad_m": {"+y": None, "-y": None},
                "collision_on_approach": False,
                "miss_distance_m": round(dx, 4),
            }
            return Result.ok(
                "the object is not between the pads at this pose",
                value,
                receipt=f"contact {det.id}: pads miss object by {dx:.3f} m",
            )
        ymin, ymax = float(y[slab].min()), float(y[slab].max())
        clear_p, clear_m = half - ymax, ymin + half
        collide = clear_p < 0 or clear_m < 0
        between = (np.abs(x) <= width / 2) & (np.abs(y) <= half)
        overlap = 0.0
        if between.any():
            overlap = max(
                0.0,
                min(float(z[between].max()), length / 2)
                - max(float(z[between].min()), -length / 2),
            )
        both = (not collide) and ymin < 0 < ymax and support_clear > -0.002
        value |= {
            "both_pads_contact": bool(both),
            "clearance_per_pad_m": {"+y": round(clear_p, 4), "-y": round(clear_m, 4)},
            "collision_on_approach": bool(collide),
            "object_width_along_jaw_m": round(ymax - ymin, 4),
            "object_offset_along_jaw_m": round((ymax + ymin) / 2, 4),
            "grip_overlap_m": round(overlap, 4),
        }
        verdict = (
            "both pads contact"
            if both
            else ("pad collides on approach" if collide else "pads would not both contact")
        )
        if support_clear < -0.002:
            verdict += "; pads below the support surface"
        return Result.ok(
            verdict,
            value,
            receipt=f"contact {det.id}: {verdict}; clearance +y {clear_p:.4f} -y "
            f"{clear_m:.4f} m, overlap {overlap:.3f} m, width "
            f"{ymax - ymin:.3f} m",
        )

    @guarded
    def inspect_release_geometry(self, destination: Any, arm: str | None = None) -> Result:
        """Is the held object above the destination's support, and how far would it drop [m]?"""
        ddet = self.detection(destination)  # type: ignore[attr-defined]
        name = self.resolve_arm(arm)  # type: ignore[attr-defined]
        dgeom, _ = self.object_geometry(ddet)
        obs = self._capture()  # type: ignore[attr-defined]
        ee = self.backend.ee_pose(name)  # type: ignore[attr-defined]
        opening = float(self.backend.gripper(name).opening_m)  # type: ignore[attr-defined]
        length, width, _ = self.backend.spec.arm(name).pad_size_m  # type: ignore[attr-defined]
        held_pts = []
        for frame in obs.frames.values():
            _, infos = self.default_segmenter.analyse(frame)  # type: ignore[attr-defined]
            for info in infos:
                pts = self.default_segmenter.regions(frame).points_m[info.mask]  # type: ignore[attr-defined]
                pts = pts[np.all(np.isfinite(pts), axis=1)]
                local = to_tool(pts, ee.position_m, ee.quat_wxyz)
                keep = ~gripper_points_mask(local, opening, self.backend.spec.arm(name).pad_size_m)  # type: ignore[attr-defined]
                lk = local[keep]
                between = (
                    (np.abs(lk[:, 0]) <= width / 2 + 0.01)
                    & (np.abs(lk[:, JAW_AXIS]) <= opening / 2)
                    & (np.abs(lk[:, APPROACH_AXIS]) <= length / 2 + 0.01)
                )
                if between.sum() >= 5:
                    held_pts.append(pts[keep])
        value: dict[str, Any] = {
            "arm": name,
            "destination_id": ddet.id,
            "handle": obs.handle,
            "destination_top_z_m": round(dgeom.top_z_m, 4),
        }
        if held_pts:
            hg = fit_geometry(np.concatenate(held_pts), None, "auto")
            centre, bottom, seen = hg.center_m, hg.bottom_z_m, True
        else:
            centre, bottom, seen = ee.position_m.copy(), float(ee.position_m[2] - length / 2), False
        off = dgeom.center_m[:2] - centre[:2]
        above = bool(inside_footprint(centre[:2], dgeom)[0])
        drop = float(bottom - dgeom.top_z_m)
        value |= {
            "held_object_seen": seen,
            "held_center_m": _r(centre),
            "held_bottom_z_m": round(bottom, 4),
            "above_support": above,
            "offset_xy_m": _r(off),
            "distance_xy_m": round(float(np.linalg.norm(off)), 4),
            "expected_drop_m": round(drop, 4),
            "holding": bool(self.backend.gripper(name).holding),  # type: ignore[attr-defined]
        }
        note = "" if seen else " (held object not visible: estimated from the pads)"
        msg = f"{'above' if above else 'NOT above'} {ddet.id}, drop {drop:.3f} m{note}"
        return Result.ok(
            msg,
            value,
            receipt=f"release over {ddet.id}: {'above' if above else 'NOT above'} "
            f"support, off ({off[0]:.4f}, {off[1]:.4f}) m, drop {drop:.3f} m"
            f"{' est.' if not seen else ''}",
        )
