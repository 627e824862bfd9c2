"""``PerceptionService``: observation cache, segmentation, pointing, mark_point and tracking.

Measurement, inspection, selection/tracking and state calls live in
:mod:`~captain_ros.perception.measure`, :mod:`~captain_ros.perception.inspect`,
:mod:`~captain_ros.perception.tracking` and
:mod:`~captain_ros.perception.state` (mixed in here). Every public method returns a
:class:`~captain_ros.core.result.Result` with a receipt of at most 300 characters and never raises.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.core.result import FailureCategory, Result
from captain_ros.core.types import CameraFrame
from captain_ros.perception.camera import mask_points, valid_depth
from captain_ros.perception.default_segmenter import (
    DefaultPointer,
    DefaultSegmenter,
    interior_pixel,
)
from captain_ros.perception.fitting import fit_geometry
from captain_ros.perception.gripper_model import robot_point_filter
from captain_ros.perception.guard import finite_number, fmt, guarded
from captain_ros.perception.inspect import InspectMixin
from captain_ros.perception.measure import MeasureMixin
from captain_ros.perception.regions import grow_from_seed
from captain_ros.perception.segmenter import Pointer, Segmenter
from captain_ros.perception.state import StateMixin
from captain_ros.perception.store import BoundedStore, Detection, Observation
from captain_ros.perception.tracking import (  # noqa: F401 - SELECT_BY, TRACK_MAX_JUMP_M
    SELECT_BY,
    TRACK_MAX_JUMP_M,
    TrackingMixin,
)

MAX_FIT_POINTS = 8000
BASE_EXCLUSION_M = 0.1
"""Text segmentation ignores regions within this xy distance of an arm base [m]."""


class PerceptionService(MeasureMixin, InspectMixin, TrackingMixin, StateMixin):
    """Perception, measurement and state calls over one backend.

    Args:
        backend: The robot rig (cameras, arm states).
        segmenter: Text/point-prompted segmenter; default: the weight-free
            :class:`~captain_ros.perception.default_segmenter.DefaultSegmenter`.
        pointer: Text-prompted pointer; default: the weight-free
            :class:`~captain_ros.perception.default_segmenter.DefaultPointer`.
        max_observations: Observation handles kept (older ones are forgotten).
        max_detections: Detection ids kept.
        merge_views: ``measure_object_geometry`` adds the points other cameras of the same
            observation see inside the detection's box (e.g. the wrist camera).
    """

    def __init__(
        self,
        backend: Backend,
        segmenter: Segmenter | None = None,
        pointer: Pointer | None = None,
        max_observations: int = 24,
        max_detections: int = 128,
        merge_views: bool = True,
    ) -> None:
        self.backend = backend
        self.merge_views = merge_views
        self.default_segmenter = DefaultSegmenter()
        self.segmenter: Segmenter = segmenter or self.default_segmenter
        self.pointer: Pointer = pointer or DefaultPointer(self.default_segmenter)
        self.observations = BoundedStore("obs", "observation handle", max_observations)
        self.detections = BoundedStore("det", "detection id", max_detections)
        self.measurements: list[dict[str, Any]] = []
        self._support: dict[tuple[str, str], float] = {}

    def memory_state(self) -> dict[str, Any]:
        """Everything the service remembers between calls (observations, detections, recorded
        measurements, support-plane cache), for a decision-point snapshot of the episode."""
        return {
            "observations": self.observations.snapshot(),
            "detections": self.detections.snapshot(),
            "measurements": copy.deepcopy(self.measurements),
            "support": dict(self._support),
        }

    def restore_memory_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`memory_state` (handles and ids continue from the same counters)."""
        self.observations.restore(state["observations"])
        self.detections.restore(state["detections"])
        self.measurements = copy.deepcopy(state["measurements"])
        self._support = dict(state["support"])

    # ---------------------------------------------------------------- observations
    def _capture(self, cameras: list[str] | None = None) -> Observation:
        valid = list(self.backend.spec.cameras)
        if cameras is not None:
            if isinstance(cameras, str):
                cameras = [cameras]
            for c in cameras:
                if c not in valid:
                    raise UnknownNameError("camera", c, valid)
        frames = self.backend.capture(cameras)
        handle = self.observations.new_id()
        obs = Observation(
            handle,
            dict(frames),
            float(self.backend.time_s()),
            self.robot_summary(),
            int(handle.split("_")[1]),
        )
        self.observations.put(handle, obs)
        return obs

    def _obs(self, handle: str | None, fresh: bool = False) -> Observation:
        """The observation ``handle``; for ``None`` the latest one (a fresh one when there is
        none yet, or when ``fresh``)."""
        if handle is None:
            latest = None if fresh else self.observations.latest()
            return latest if latest is not None else self._capture()
        return self.observations.get(handle)

    def _frame(self, handle: str | None, camera: str) -> tuple[Observation, CameraFrame]:
        obs = self._obs(handle)
        if camera not in obs.frames and handle is None and camera in self.backend.spec.cameras:
            obs = self._capture()  # the latest observation lacks this camera
        return obs, obs.frame(camera)

    def support_z(self, obs: Observation, camera: str) -> float:
        """Table-plane height [m] seen by ``camera`` in ``obs`` (cached)."""
        key = (obs.handle, camera)
        if key not in self._support:
            regions = self.default_segmenter.regions(obs.frame(camera))
            self._support[key] = regions.support_z_m
        return self._support[key]

    @guarded
    def observe(self, cameras: list[str] | None = None) -> Result:
        """Capture RGB-D from ``cameras`` (all when ``None``) and the robot state under a handle."""
        obs = self._capture(cameras)
        cams = sorted(obs.frames)
        sizes = {c: [obs.frames[c].width, obs.frames[c].height] for c in cams}
        value = {
            "handle": obs.handle,
            "observation_handle": obs.handle,
            "cameras": cams,
            "stamp_s": obs.stamp_s,
            "robot": obs.robot,
            "robot_state": obs.robot,
            "image_size_px": sizes,
            "images": [{"handle": obs.handle, "camera": c} for c in cams],
        }
        return Result.ok(
            f"observation {obs.handle}: {', '.join(cams)}",
            value,
            receipt=f"observe: {obs.handle} cameras={','.join(cams)} t={obs.stamp_s:.2f}s",
        )

    def image(self, handle: str, camera: str) -> np.ndarray:
        """The (H, W, 3) uint8 RGB image of ``camera`` in observation ``handle`` (raises
        UnknownNameError for unknown names; used by the session's ``image()``)."""
        return self.observations.get(handle).frame(camera).rgb

    # ---------------------------------------------------------------- detections
    def _robot_filter(self, obs: Observation):
        return robot_point_filter(self.backend, obs.robot)

    def _on_robot_base(self, pts: np.ndarray) -> bool:
        """Most points lie within ``BASE_EXCLUSION_M`` (xy) of an arm base (the robot's own base
        and shoulder, never a task object)."""
        for arm in self.backend.spec.arms:
            d = np.linalg.norm(pts[:, :2] - arm.base_pose.position_m[:2], axis=1)
            if float(np.mean(d < BASE_EXCLUSION_M)) > 0.5:
                return True
        return False

    def make_detection(
        self,
        obs: Observation,
        camera: str,
        mask: np.ndarray,
        label: str,
        score: float,
        pixel_uv: tuple[int, int] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Detection | None:
        """Back-project a mask, fit its geometry and store it; ``None`` if it has no depth."""
        frame = obs.frame(camera)
        mask = np.asarray(mask, dtype=bool) & valid_depth(frame)
        pts = mask_points(frame, mask, MAX_FIT_POINTS)
        if len(pts) < 5:
            return None
        sz = self.support_z(obs, camera)
        geom = fit_geometry(pts, sz)
        uv = pixel_uv if pixel_uv is not None else interior_pixel(mask)
        rgb = np.median(frame.rgb[mask], axis=0).astype(np.uint8)
        det = Detection(
            self.detections.new_id(),
            str(label),
            float(score),
            obs.handle,
            camera,
            mask,
            pts,
            geom,
            (int(uv[0]), int(uv[1])),
            sz,
            rgb,
            dict(extra or {}),
        )
        self.detections.put(det.id, det)
        return det

    def detection(self, obj: Any) -> Detection:
        """A stored detection from an id (or a detection dict carrying ``id``)."""
        if isinstance(obj, dict):
            obj = obj.get("id", obj.get("detection_id"))
        return self.detections.get(obj)

    @staticmethod
    def _receipt(d: Detection, prefix: str) -> str:
        g = d.geometry
        return (
            f"{prefix}: {d.id} '{d.label[:40]}' at {fmt(g.center_m)} m, extents "
            f"{fmt(g.extents_m)} m, {g.shape}, {d.handle}/{d.camera} px {d.pixel_uv}"
        )

    @guarded
    def segment(self, text: str, handle: str | None = None, camera: str = "head") -> Result:
        """Detections of the objects ``text`` names (best first) in observation ``handle``
        (``None``: the latest observation; one is taken if there is none)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError("text must be a non-empty phrase such as 'red cube'")
        obs, frame = self._frame(handle, camera)
        robot = self._robot_filter(obs)
        dets = []
        for cand in self.segmenter.segment(frame, text):
            pts = mask_points(frame, cand.mask, 2000)
            if len(pts) and (float(np.mean(robot(pts))) > 0.5 or self._on_robot_base(pts)):
                continue
            det = self.make_detection(obs, camera, cand.mask, text, cand.score)
            if det is not None:
                dets.append(det)
        if not dets:
            return Result.fail(
                FailureCategory.NOT_DETECTED,
                f"nothing matching {text!r} in {obs.handle}/{camera}. Re-observe, "
                "rephrase (colour + shape word), try another camera, or click it "
                "with mark_point.",
                receipt=f"segment {text!r}: nothing found",
            )
        best = dets[0]
        return Result.ok(
            f"{len(dets)} detection(s) for {text!r}",
            {"detections": [d.to_value() for d in dets], "handle": obs.handle},
            receipt=self._receipt(best, f"segment {len(dets)} found; best"),
        )

    @guarded
    def point(self, text: str, handle: str | None = None, camera: str = "head") -> Result:
        """Pixels on what ``text`` names: ``{"points": [{"u", "v", "label"}]}``."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError("text must be a non-empty phrase such as 'red cube'")
        obs, frame = self._frame(handle, camera)
        pts = self.pointer.point(frame, text)
        pts = [p for p in pts if 0 <= p.u < frame.width and 0 <= p.v < frame.height]
        if not pts:
            return Result.fail(
                FailureCategory.NOT_DETECTED,
                f"no point found for {text!r} in {obs.handle}/{camera}; rephrase, "
                "or look at the image and use mark_point.",
                receipt=f"point {text!r}: nothing",
            )
        value: dict[str, Any] = {
            "points": [{"u": int(round(p.u)), "v": int(round(p.v)), "label": p.label} for p in pts],
            "handle": obs.handle,
            "camera": camera,
        }
        first = value["points"][0]
        return Result.ok(
            f"{len(pts)} point(s) for {text!r}",
            value,
            receipt=f"point {text!r}: {len(pts)} point(s), first "
            f"({first['u']}, {first['v']}) in {obs.handle}/{camera}",
        )

    @staticmethod
    def pixel(frame: CameraFrame, u: Any, v: Any) -> tuple[int, int]:
        """Integer pixel from ``u`` (column), ``v`` (row); floats in [0, 1) for both are read as
        fractions of the width/height. Raises InvalidArgumentError off the image."""
        fu, fv = finite_number(u, "u"), finite_number(v, "v")
        if (
            isinstance(u, float)
            and isinstance(v, float)
            and 0 <= fu < 1
            and 0 <= fv < 1
            and (fu > 0 or fv > 0)
        ):
            fu, fv = fu * frame.width, fv * frame.height
        iu, iv = int(np.floor(fu)), int(np.floor(fv))
        if not (0 <= iu < frame.width and 0 <= iv < frame.height):
            raise InvalidArgumentError(
                f"pixel ({u}, {v}) is off the {frame.width}x{frame.height} image of "
                f"{frame.camera}; u is the column in [0, {frame.width - 1}], v the row in "
                f"[0, {frame.height - 1}]"
            )
        return iu, iv

    def _no_depth(self, frame: CameraFrame, u: int, v: int) -> Result:
        vv, uu = np.nonzero(valid_depth(frame))
        hint = ""
        if uu.size:
            k = int(np.argmin((uu - u) ** 2 + (vv - v) ** 2))
            hint = f" Nearest pixel with depth: ({int(uu[k])}, {int(vv[k])})."
        return Result.fail(
            FailureCategory.NO_DEPTH,
            f"pixel ({u}, {v}) of {frame.camera} has no valid depth; pick a nearby "
            f"pixel on the object.{hint}",
            receipt=f"mark_point ({u},{v}): no depth",
        )

    @guarded
    def mark_point(
        self, handle: str, camera: str, u: Any, v: Any, label: str = "", granularity: str = "object"
    ) -> Result:
        """Back-project pixel (u, v), grow it into an object (or part) mask, return a detection.

        ``granularity``: ``"object"`` (depth- and colour-continuous region), ``"part"`` (tighter
        thresholds, e.g. a handle) or ``"point"`` (only the clicked surface point)."""
        if granularity not in ("object", "part", "point"):
            raise InvalidArgumentError("granularity must be 'object', 'part' or 'point'")
        obs, frame = self._frame(handle, camera)
        iu, iv = self.pixel(frame, u, v)
        if not valid_depth(frame)[iv, iu]:
            return self._no_depth(frame, iu, iv)
        regions = self.default_segmenter.regions(frame)
        if granularity == "point":  # just the clicked surface point (a 5-pixel-wide disc)
            vv, uu = np.ogrid[: frame.height, : frame.width]
            mask = ((uu - iu) ** 2 + (vv - iv) ** 2 <= 6) & valid_depth(frame)
        else:
            mask = grow_from_seed(frame, iu, iv, granularity, regions)
        if not mask.any():
            z = float(regions.points_m[iv, iu, 2])
            return Result.fail(
                FailureCategory.NOT_DETECTED,
                f"pixel ({iu}, {iv}) lies on the support surface (z={z:.3f} m), not "
                "on an object; click a pixel inside the object in the image.",
                receipt=f"mark_point ({iu},{iv}): on the table",
            )
        if granularity != "point" and not isinstance(self.segmenter, DefaultSegmenter):
            cands = self.segmenter.segment(frame, str(label), points=[(iu, iv)])
            if cands and cands[0].mask[iv, iu]:
                mask = cands[0].mask
        det = self.make_detection(
            obs, camera, mask, label or "object", 1.0, (iu, iv), {"granularity": granularity}
        )
        if det is None:
            return self._no_depth(frame, iu, iv)
        return Result.ok(
            f"{det.id} from pixel ({iu}, {iv})",
            det.to_value(),
            receipt=self._receipt(det, "mark_point"),
        )
