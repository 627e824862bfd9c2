"""Perception, measurement and state primitives of the robot API.

``PerceptionService(backend, segmenter=None, pointer=None)`` implements observe, segment, point,
mark_point, select_detection, track_target, the measurement calls and the state calls (see
``docs/contracts.md``). The default segmenter and pointer are weight-free; SAM-family segmenters
and VLM pointers (:mod:`~captain_ros.perception.sam`, :mod:`~captain_ros.perception.vlm_pointer`)
import torch/transformers lazily, so importing this package stays torch-free.
"""

from captain_ros.perception.default_segmenter import DefaultPointer, DefaultSegmenter
from captain_ros.perception.fitting import ObjectGeometry, fit_geometry
from captain_ros.perception.point_parsing import parse_points
from captain_ros.perception.segmenter import MaskCandidate, PointCandidate, Pointer, Segmenter
from captain_ros.perception.service import PerceptionService
from captain_ros.perception.store import Detection, Observation

__all__ = [
    "DefaultPointer",
    "DefaultSegmenter",
    "Detection",
    "MaskCandidate",
    "ObjectGeometry",
    "Observation",
    "PerceptionService",
    "PointCandidate",
    "Pointer",
    "Segmenter",
    "fit_geometry",
    "parse_points",
]
