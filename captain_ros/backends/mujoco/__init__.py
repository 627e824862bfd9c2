"""MuJoCo simulation backend for the AgileX PiPER rigs (``piper``, ``piper_dual``)."""

from __future__ import annotations

from typing import Any

from captain_ros.backends.mujoco import render as _render  # noqa: F401 - sets MUJOCO_GL=egl first
from captain_ros.backends.mujoco.backend import MujocoBackend
from captain_ros.backends.mujoco.config import MujocoConfig
from captain_ros.backends.mujoco.kinematics import MujocoKinematics
from captain_ros.backends.mujoco.snapshot import MujocoSnapshot
from captain_ros.core.scene import SceneSpec


def make(scene: SceneSpec | None = None, **options: Any) -> MujocoBackend:
    """The MuJoCo rig for ``scene`` with :class:`MujocoConfig` ``options`` (unguarded:
    :func:`~captain_ros.backends.registry.make_backend` wraps it in the safety layer)."""
    c = MujocoConfig.from_options(options)
    return MujocoBackend(
        scene,
        c.rig,
        image_size_px=c.image_size_px,
        render_segmentation=c.render_segmentation,
        noise=c.noise,
    )


__all__ = ["MujocoBackend", "MujocoConfig", "MujocoKinematics", "MujocoSnapshot", "make"]
