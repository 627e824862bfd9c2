"""The observation cache (handles ``obs_<n>``) and the detection store (ids ``det_<n>``).

Both are bounded: the oldest entries are dropped first, and a dropped handle or id is reported as
unknown with a message telling the policy to observe again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from captain_ros.core.errors import UnknownNameError
from captain_ros.core.types import CameraFrame
from captain_ros.perception.fitting import ObjectGeometry


@dataclass(frozen=True)
class Observation:
    """Frames of one ``observe()`` call plus the robot state at that time."""

    handle: str
    frames: dict[str, CameraFrame]
    stamp_s: float
    robot: dict[str, Any]
    index: int

    def frame(self, camera: str) -> CameraFrame:
        if camera not in self.frames:
            raise UnknownNameError("camera", camera, sorted(self.frames))
        return self.frames[camera]


@dataclass(frozen=True)
class Detection:
    """One segmented object instance.

    Attributes:
        id: ``det_<n>``.
        label: Prompt or label given by the policy.
        score: Confidence in [0, 1].
        handle / camera: Where it was seen.
        mask: (H, W) bool in that camera's image.
        points_m: (N, 3) world points of the mask pixels with depth [m].
        geometry: Gravity-aligned shape fit of those points.
        pixel_uv: A pixel on the object (interior point or the clicked pixel) [px].
        support_z_m: Height of the table plane in that frame [m].
        rgb: Median colour (RGB uint8).
    """

    id: str
    label: str
    score: float
    handle: str
    camera: str
    mask: np.ndarray
    points_m: np.ndarray
    geometry: ObjectGeometry
    pixel_uv: tuple[int, int]
    support_z_m: float
    rgb: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def area_px(self) -> int:
        return int(self.mask.sum())

    def to_value(self) -> dict[str, Any]:
        """The detection as the API returns it (contract keys plus ``detection_id``)."""
        g = self.geometry
        return {
            "id": self.id,
            "detection_id": self.id,
            "label": self.label,
            "score": round(float(self.score), 4),
            "centroid_m": [round(float(x), 4) for x in g.center_m],
            "extents_m": [round(float(x), 4) for x in g.extents_m],
            "pixel_uv": [int(self.pixel_uv[0]), int(self.pixel_uv[1])],
            "area_px": self.area_px,
            "handle": self.handle,
            "camera": self.camera,
        }


class BoundedStore:
    """Insertion-ordered mapping ``<prefix>_<n> -> item`` that keeps the newest ``capacity``."""

    def __init__(self, prefix: str, kind: str, capacity: int) -> None:
        self.prefix = prefix
        self.kind = kind
        self.capacity = capacity
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._next = 0

    def new_id(self) -> str:
        self._next += 1
        return f"{self.prefix}_{self._next}"

    def put(self, key: str, item: Any) -> None:
        self._items[key] = item
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def get(self, key: object) -> Any:
        if not isinstance(key, str) or key not in self._items:
            recent = list(self._items)[-8:]
            raise UnknownNameError(self.kind, key, recent)
        return self._items[key]

    def find(self, key: str) -> Any | None:
        """The item for ``key`` or ``None``."""
        return self._items.get(key)

    def latest(self) -> Any | None:
        return next(reversed(self._items.values())) if self._items else None

    def __len__(self) -> int:
        return len(self._items)

    def snapshot(self) -> tuple[tuple[tuple[str, Any], ...], int]:
        """The entries (shared, not copied: observations and detections are never changed after
        they are stored) and the id counter, for a decision-point snapshot."""
        return tuple(self._items.items()), self._next

    def restore(self, snap: tuple[tuple[tuple[str, Any], ...], int]) -> None:
        """Restore :meth:`snapshot`: the same entries in the same order, the same next id."""
        items, next_id = snap
        self._items = OrderedDict(items)
        self._next = int(next_id)

    def values(self) -> list[Any]:
        return list(self._items.values())
