"""Backends: one small interface (:class:`Backend`) for simulation and hardware."""

from __future__ import annotations

import os
from typing import Any

from captain_ros.backends.base import Backend, Kinematics
from captain_ros.core.errors import UnknownNameError
from captain_ros.core.scene import SceneSpec

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must precede `import mujoco`

BACKENDS = ("mujoco", "fake")


def make_backend(name: str, scene: SceneSpec | None = None, **kw: Any) -> Backend:
    """Build a backend by name (``"mujoco"`` or ``"fake"``) for ``scene``.

    Args:
        name: Backend name.
        scene: A :class:`~captain_ros.core.scene.SceneSpec` (``None``: the empty table); tasks
            sample one with ``task.sample(seed)``.
        **kw: Passed to the backend constructor (e.g. ``rig="piper_dual"`` without a scene).
    """
    if name == "mujoco":
        from captain_ros.backends.mujoco import MujocoBackend

        return MujocoBackend(scene, **kw)
    if name == "fake":
        from captain_ros.backends.fake import FakeBackend

        return FakeBackend(scene=scene, **kw)
    raise UnknownNameError("backend", name, list(BACKENDS))


__all__ = ["BACKENDS", "Backend", "Kinematics", "make_backend"]
