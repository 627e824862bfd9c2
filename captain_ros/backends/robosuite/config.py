"""Options of the robosuite backend: ``make_backend("robosuite", scene, **options)``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from captain_ros.backends.rig_config import from_options
from captain_ros.core.errors import InvalidArgumentError

IMAGE_SIZE_PX = 256
"""Default square camera resolution [px]."""


@dataclass(frozen=True)
class RobosuiteConfig:
    """Options of :class:`~captain_ros.backends.robosuite.backend.RobosuiteBackend`.

    Attributes:
        image_size_px: Square camera resolution [px].
        render_segmentation: Fill ``CameraFrame.segmentation`` (object ids in scene order).
    """

    image_size_px: int = IMAGE_SIZE_PX
    render_segmentation: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.image_size_px, int) and self.image_size_px > 0):
            raise InvalidArgumentError(
                f"image_size_px must be a positive integer, got {self.image_size_px!r}"
            )

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> RobosuiteConfig:
        return from_options(cls, "robosuite", options)


__all__ = ["IMAGE_SIZE_PX", "RobosuiteConfig"]
