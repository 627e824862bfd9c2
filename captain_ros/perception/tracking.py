"""Choosing among detections (``select_detection``: by score, size, distance or position) and
following one into a newer observation (``track_target``: the nearest region of the same colour
and size within ``TRACK_MAX_JUMP_M``).

:class:`TrackingMixin` is mixed into :class:`captain_ros.perception.service.PerceptionService`,
which provides the observations, the detections and the segmenter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.result import FailureCategory, Result
from captain_ros.perception.camera import mask_points
from captain_ros.perception.guard import guarded

if TYPE_CHECKING:
    from collections.abc import Callable

    from captain_ros.backends.base import Backend
    from captain_ros.perception.default_segmenter import DefaultSegmenter
    from captain_ros.perception.store import Detection, Observation

SELECT_BY = ("score", "largest", "nearest", "leftmost", "rightmost", "highest", "lowest")
TRACK_MAX_JUMP_M = 0.3


class TrackingMixin:
    """Mixed into PerceptionService."""

    backend: Backend
    default_segmenter: DefaultSegmenter

    if TYPE_CHECKING:  # provided by PerceptionService

        def detection(self, obj: Any) -> Detection: ...

        def _obs(self, handle: str | None, fresh: bool = False) -> Observation: ...

        def _robot_filter(self, obs: Observation) -> Callable[[np.ndarray], np.ndarray]: ...

        def _on_robot_base(self, pts: np.ndarray) -> bool: ...

        def make_detection(
            self,
            obs: Observation,
            camera: str,
            mask: np.ndarray,
            label: str,
            score: float,
            pixel_uv: tuple[int, int] | None = None,
            extra: dict[str, Any] | None = None,
        ) -> Detection | None: ...

        @staticmethod
        def _receipt(d: Detection, prefix: str) -> str: ...

    @guarded
    def select_detection(self, detection_ids: list[str], by: str = "score") -> Result:
        """One detection out of ``detection_ids`` by score|largest|nearest|leftmost|rightmost|
        highest|lowest (nearest: to the nearest arm base; leftmost: largest world y)."""
        if by not in SELECT_BY:
            raise InvalidArgumentError(f"by must be one of {', '.join(SELECT_BY)}")
        if isinstance(detection_ids, (str, dict)):
            detection_ids = [detection_ids]
        dets = [self.detection(d) for d in list(detection_ids)]
        if not dets:
            raise InvalidArgumentError("detection_ids is empty; pass ids from segment/mark_point")
        bases = [a.base_pose.position_m for a in self.backend.spec.arms]
        keys = {
            "score": lambda d: -d.score,
            "largest": lambda d: -d.area_px,
            "nearest": lambda d: min(np.linalg.norm(d.geometry.center_m - b) for b in bases),
            "leftmost": lambda d: -d.geometry.center_m[1],
            "rightmost": lambda d: d.geometry.center_m[1],
            "highest": lambda d: -d.geometry.top_z_m,
            "lowest": lambda d: d.geometry.top_z_m,
        }
        best = min(dets, key=keys[by])
        return Result.ok(
            f"selected {best.id} by {by}",
            best.to_value(),
            receipt=self._receipt(best, f"select by {by}"),
        )

    @guarded
    def track_target(self, detection_id: str, handle: str | None = None) -> Result:
        """Re-identify a detection in a newer observation (a fresh one when ``handle`` is None),
        matching colour, size and position."""
        old = self.detection(detection_id)
        obs = self._obs(handle, fresh=True)
        camera = old.camera if old.camera in obs.frames else sorted(obs.frames)[0]
        frame = obs.frame(camera)
        _, infos = self.default_segmenter.analyse(frame)
        robot = self._robot_filter(obs)
        best, best_cost = None, np.inf
        for info in infos:
            pts = mask_points(frame, info.mask, 500)
            if len(pts) and (float(np.mean(robot(pts))) > 0.5 or self._on_robot_base(pts)):
                continue
            jump = float(np.linalg.norm(info.geometry.center_m - old.geometry.center_m))
            dcol = float(np.abs(info.rgb.astype(float) - old.rgb.astype(float)).mean()) / 255
            dsize = float(
                np.abs(np.sort(info.geometry.extents_m) - np.sort(old.geometry.extents_m)).sum()
            )
            cost = jump + 0.5 * dcol + 0.5 * dsize
            if jump < TRACK_MAX_JUMP_M and dcol < 0.2 and cost < best_cost:
                best, best_cost = info, cost
        if best is None:
            return Result.fail(
                FailureCategory.NOT_DETECTED,
                f"{old.id} ('{old.label}') not found again in {obs.handle}/{camera}; "
                "it may be occluded or moved far: try another camera or mark_point.",
                receipt=f"track {old.id}: lost",
            )
        det = self.make_detection(
            obs,
            camera,
            best.mask,
            old.label,
            max(0.0, 1 - best_cost),
            extra={"tracked_from": old.id},
        )
        if det is None:
            raise InvalidArgumentError("the re-identified region has no depth")
        moved = float(np.linalg.norm(det.geometry.center_m - old.geometry.center_m))
        value = det.to_value() | {"tracked_from": old.id, "moved_m": round(moved, 4)}
        return Result.ok(
            f"{old.id} -> {det.id}",
            value,
            receipt=self._receipt(det, f"track {old.id}") + f" moved {moved:.3f} m",
        )
