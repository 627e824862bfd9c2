"""Options of the kinematic fake rig: ``make_backend("fake", scene, **options)``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from captain_ros.backends.fake.scene import FakeBox
from captain_ros.backends.rig_config import BackendOptions
from captain_ros.core.errors import InvalidArgumentError


@dataclass(frozen=True)
class FakeConfig(BackendOptions):
    """Options of :class:`~captain_ros.backends.fake.backend.FakeBackend`.

    Attributes:
        boxes: The boxes on the table (``None``: the scene's, else a red and a blue box).
        rig: ``"piper"`` or ``"piper_dual"`` when no scene is given (a scene's rig wins).
        image_size: (height, width) of every camera [px].
        table_top_z_m: Height of the table surface [m].
        stiffness_n_m: Contact spring constant [N/m].
    """

    backend: ClassVar[str] = "fake"
    boxes: Sequence[FakeBox] | None = None
    rig: str = "piper"
    image_size: tuple[int, int] = (192, 256)
    table_top_z_m: float = 0.0
    stiffness_n_m: float = 2000.0

    def __post_init__(self) -> None:
        if not self.stiffness_n_m > 0:
            raise InvalidArgumentError(
                f"stiffness_n_m must be positive, got {self.stiffness_n_m!r}"
            )


__all__ = ["FakeConfig"]
