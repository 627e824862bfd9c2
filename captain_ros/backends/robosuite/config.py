"""Options of the robosuite backend: ``make_backend("robosuite", scene, **options)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from captain_ros.backends.rig_config import BackendOptions

IMAGE_SIZE_PX = 256
"""Default square camera resolution [px]."""


@dataclass(frozen=True)
class RobosuiteConfig(BackendOptions):
    """Options of :class:`~captain_ros.backends.robosuite.backend.RobosuiteBackend`.

    Attributes:
        image_size_px: Square camera resolution [px].
        render_segmentation: Fill ``CameraFrame.segmentation`` (object ids in scene order).
    """

    backend: ClassVar[str] = "robosuite"
    image_size_px: int = IMAGE_SIZE_PX
    render_segmentation: bool = False

    def __post_init__(self) -> None:
        self.check_image_size(self.image_size_px)


__all__ = ["IMAGE_SIZE_PX", "RobosuiteConfig"]
