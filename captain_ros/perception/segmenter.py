"""The segmenter and pointer interfaces every backend implements (weight-free, SAM, VLM)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from captain_ros.core.types import CameraFrame


@dataclass(frozen=True)
class MaskCandidate:
    """One object mask proposed for a prompt.

    Attributes:
        mask: (H, W) bool.
        score: Confidence in [0, 1].
        label: What the backend thinks it is (e.g. the prompt, or ``"red box"``).
    """

    mask: np.ndarray
    score: float
    label: str


@dataclass(frozen=True)
class PointCandidate:
    """One pixel a pointer proposes: column ``u``, row ``v`` [px] and a label."""

    u: float
    v: float
    label: str


@runtime_checkable
class Segmenter(Protocol):
    """Text- or point/box-prompted instance segmentation of one RGB-D frame."""

    name: str

    def segment(
        self,
        frame: CameraFrame,
        text: str = "",
        points: list[tuple[float, float]] | None = None,
        box: tuple[float, float, float, float] | None = None,
    ) -> list[MaskCandidate]:
        """Masks for ``text`` and/or prompt ``points`` [(u, v) px] / ``box`` (u0, v0, u1, v1) [px],
        best first. Returns ``[]`` when nothing matches."""


@runtime_checkable
class Pointer(Protocol):
    """Text-prompted pointing: pixels on the objects a phrase refers to."""

    name: str

    def point(self, frame: CameraFrame, text: str) -> list[PointCandidate]:
        """Pixels (best first) on what ``text`` names; ``[]`` when nothing matches."""
