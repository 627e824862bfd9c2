"""The kinematic fake rig: a device-like backend without physics (see :mod:`.backend`)."""

from __future__ import annotations

from typing import Any

from captain_ros.backends.fake.backend import FakeBackend
from captain_ros.backends.fake.config import FakeConfig
from captain_ros.backends.fake.kinematics import FakeKinematics
from captain_ros.backends.fake.scene import FakeBox, boxes_from_scene, matrix_rpy, rpy_matrix
from captain_ros.core.scene import SceneSpec


def make(scene: SceneSpec | None = None, **options: Any) -> FakeBackend:
    """The fake rig for ``scene`` with :class:`FakeConfig` ``options`` (unguarded:
    :func:`~captain_ros.backends.registry.make_backend` wraps it in the safety layer)."""
    c = FakeConfig.from_options(options)
    return FakeBackend(
        c.boxes,
        scene=scene,
        rig=c.rig,
        image_size=c.image_size,
        table_top_z_m=c.table_top_z_m,
        stiffness_n_m=c.stiffness_n_m,
    )


__all__ = [
    "FakeBackend",
    "FakeBox",
    "FakeConfig",
    "FakeKinematics",
    "boxes_from_scene",
    "make",
    "matrix_rpy",
    "rpy_matrix",
]
