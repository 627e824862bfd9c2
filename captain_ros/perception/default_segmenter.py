"""The weight-free default segmenter and pointer for the simulator's primitive objects.

Regions come from :func:`~captain_ros.perception.regions.over_segment` (table removal, depth and
colour edges, connected components); each region is described by its median colour and a
gravity-aligned shape fit, then scored against the prompt's colour and shape words
(:mod:`~captain_ros.perception.prompt`). Point prompts select the region under the point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from captain_ros.core.errors import CaptainError
from captain_ros.core.types import CameraFrame
from captain_ros.perception.camera import valid_depth, world_points_image
from captain_ros.perception.fitting import ObjectGeometry, fit_geometry
from captain_ros.perception.prompt import colour_score, describe, parse_prompt, shape_score
from captain_ros.perception.regions import Regions, grow_from_seed, over_segment
from captain_ros.perception.segmenter import MaskCandidate, PointCandidate

CACHE_FRAMES = 6
MAX_OBJECT_SIZE_M = 0.45
"""Regions larger than this in any direction are not objects (robot links, furniture) [m]."""


@dataclass(frozen=True)
class RegionInfo:
    """One region: label id, mask, median colour (RGB uint8), shape fit, area [px]."""

    label: int
    mask: np.ndarray
    rgb: np.ndarray
    geometry: ObjectGeometry
    area_px: int


class DefaultSegmenter:
    """Weight-free segmentation of coloured primitives on a table.

    Args:
        exclude: Optional ``f(points (N, 3)) -> (N,) bool`` marking points that belong to the robot;
            regions mostly made of such points are dropped.
        min_score: Candidates scoring below this are not returned.
        max_candidates: At most this many candidates per prompt.
    """

    name = "default"

    def __init__(
        self,
        exclude: Callable[[np.ndarray], np.ndarray] | None = None,
        min_score: float = 0.25,
        max_candidates: int = 8,
    ) -> None:
        self.exclude = exclude
        self.min_score = min_score
        self.max_candidates = max_candidates
        self._cache: list[list] = []  # [rgb array, Regions, list[RegionInfo] | None]

    def regions(self, frame: CameraFrame) -> Regions:
        """Over-segmentation of the frame (the last few frames are cached, keyed by the identity
        of their RGB array)."""
        for entry in self._cache:
            if entry[0] is frame.rgb:
                return entry[1]
        regions = over_segment(frame)
        self._cache = [[frame.rgb, regions, None], *self._cache[: CACHE_FRAMES - 1]]
        return regions

    def points(self, frame: CameraFrame) -> np.ndarray:
        """(H, W, 3) world points of the frame, from the region cache when it has the frame."""
        for entry in self._cache:
            if entry[0] is frame.rgb:
                return entry[1].points_m
        return world_points_image(frame)

    def analyse(self, frame: CameraFrame) -> tuple[Regions, list[RegionInfo]]:
        """Regions of the frame and the description of each object-sized one (cached)."""
        regions = self.regions(frame)
        entry = next(e for e in self._cache if e[0] is frame.rgb)
        if entry[2] is None:
            infos: list[RegionInfo] = []
            for lab, sl in enumerate(ndimage.find_objects(regions.labels), start=1):
                if sl is None:
                    continue
                mask = np.zeros(regions.labels.shape, dtype=bool)
                mask[sl] = regions.labels[sl] == lab
                info = self._describe(frame, regions, lab, mask)
                if info is not None:
                    infos.append(info)
            entry[2] = infos
        return regions, entry[2]

    def _describe(
        self, frame: CameraFrame, regions: Regions, lab: int, mask: np.ndarray
    ) -> RegionInfo | None:
        pts = regions.points_m[mask & valid_depth(frame)]
        if len(pts) < 20:
            return None
        if self.exclude is not None and float(np.mean(self.exclude(pts))) > 0.3:
            return None
        try:
            geom = fit_geometry(pts, regions.support_z_m)
        except CaptainError:
            return None
        if float(np.max(geom.extents_m)) > MAX_OBJECT_SIZE_M:
            return None
        rgb = np.median(frame.rgb[mask], axis=0).astype(np.uint8)
        return RegionInfo(lab, mask, rgb, geom, int(mask.sum()))

    def score(self, info: RegionInfo, text: str) -> float:
        """Prompt match score of one region in [0, 1]."""
        p = parse_prompt(text)
        s = 1.0
        if p.colour is not None:
            s *= colour_score(info.rgb, p.colour)
        if p.shape is not None:
            s *= shape_score(info.geometry, p.shape)
        if p.colour is None and p.shape is None:
            s = 0.3
        if p.colour is None:
            # no colour word: prefer coloured regions (task objects) over neutral ones (robot
            # links, fixtures); a neutral region can still win when nothing else matches
            r, g, b = (float(x) for x in info.rgb)
            sat = (max(r, g, b) - min(r, g, b)) / max(r, g, b, 1.0)
            s *= 0.6 + 0.4 * min(1.0, sat / 0.5)
        return float(s)

    def segment(
        self,
        frame: CameraFrame,
        text: str = "",
        points: list[tuple[float, float]] | None = None,
        box: tuple[float, float, float, float] | None = None,
    ) -> list[MaskCandidate]:
        """Masks matching ``text``; with ``points``, the regions under them; with ``box``, the
        regions whose pixels mostly fall inside it."""
        out: list[MaskCandidate] = []
        if points:
            regions = self.regions(frame)
            for u, v in points:
                mask = grow_from_seed(frame, int(u), int(v), "object", regions)
                if mask.any():
                    out.append(MaskCandidate(mask, 1.0, text or "object"))
            return out
        _, infos = self.analyse(frame)
        for info in infos:
            s = self.score(info, text) if text else 0.3
            if box is not None:
                u0, v0, u1, v1 = box
                vv, uu = np.nonzero(info.mask)
                s *= float(np.mean((uu >= u0) & (uu <= u1) & (vv >= v0) & (vv <= v1)))
            if s >= self.min_score or (box is not None and s > 0.15):
                out.append(MaskCandidate(info.mask, s, text or describe(info.rgb, info.geometry)))
        out.sort(key=lambda c: -c.score)
        return out[: self.max_candidates]


def interior_pixel(mask: np.ndarray) -> tuple[int, int]:
    """(u, v) of the mask pixel farthest from the mask's border (lands on the object even for
    concave shapes)."""
    dist = ndimage.distance_transform_edt(np.pad(mask, 1))[1:-1, 1:-1]
    v, u = np.unravel_index(int(np.argmax(dist)), mask.shape)
    return int(u), int(v)


class DefaultPointer:
    """Weight-free pointer: the most interior pixel of each default-segmenter mask."""

    name = "default"

    def __init__(self, segmenter: DefaultSegmenter | None = None) -> None:
        self.segmenter = segmenter or DefaultSegmenter()

    def point(self, frame: CameraFrame, text: str) -> list[PointCandidate]:
        out = []
        for cand in self.segmenter.segment(frame, text):
            u, v = interior_pixel(cand.mask)
            out.append(PointCandidate(float(u), float(v), cand.label))
        return out
