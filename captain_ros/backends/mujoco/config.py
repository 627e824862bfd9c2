"""Options of the MuJoCo backend: ``make_backend("mujoco", scene, **options)``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from captain_ros.backends.mujoco.noise import NoiseDraw
from captain_ros.backends.mujoco.render import IMAGE_SIZE_PX
from captain_ros.backends.rig_config import BackendOptions


@dataclass(frozen=True)
class MujocoConfig(BackendOptions):
    """Options of :class:`~captain_ros.backends.mujoco.backend.MujocoBackend`.

    Attributes:
        rig: ``"piper"`` or ``"piper_dual"`` when no scene is given (a scene's rig wins).
        image_size_px: Square camera resolution [px] (512 as in the paper).
        render_segmentation: Fill ``CameraFrame.segmentation`` (~25 ms per camera).
        noise: A :class:`~captain_ros.backends.mujoco.noise.NoiseDraw` (or its dict) for the
            stochastic mode; ``None``: deterministic.
    """

    backend: ClassVar[str] = "mujoco"
    rig: str = "piper"
    image_size_px: int = IMAGE_SIZE_PX
    render_segmentation: bool = False
    noise: NoiseDraw | Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        self.check_image_size(self.image_size_px)


__all__ = ["MujocoConfig"]
