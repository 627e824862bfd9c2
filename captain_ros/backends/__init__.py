"""Backends: one small interface (:class:`Backend`) for simulation and hardware."""

from __future__ import annotations

import os
from typing import Any

from captain_ros.backends.base import Backend, Kinematics

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must precede `import mujoco`

BACKENDS = ("mujoco", "fake", "piper")


def make_backend(name: str, scene: Any = None, *, task: Any = None, seed: int | None = None,
                 **kw: Any) -> Backend:
    """Build a backend by name (``"mujoco"``, ``"fake"`` or ``"piper"``), wrapped in the safety
    layer (:class:`~captain_ros.backends.safety.SafeBackend`) that every backend shares.

    Args:
        name: Backend name.
        scene: A :class:`~captain_ros.core.scene.SceneSpec` (``None``: empty table).
        task: Optional task (name or object with ``sample(seed)``); its scene for ``seed`` is used
            when ``scene`` is not given.
        seed: Seed for ``task.sample`` (default 0).
        **kw: Passed to the backend constructor (e.g. ``rig="piper_dual"``).
    """
    if scene is None and task is not None:
        if isinstance(task, str):
            from captain_ros.tasks import get_task

            task = get_task(task)
        scene = task.sample(0 if seed is None else seed)
    from captain_ros.backends.safety import SIM_DEFAULTS, SafeBackend

    if name == "mujoco":
        from captain_ros.backends.mujoco import MujocoBackend

        return SafeBackend(MujocoBackend(scene, **kw), SIM_DEFAULTS)
    if name == "fake":
        from captain_ros.backends.fake import FakeBackend

        return SafeBackend(FakeBackend(scene=scene, **kw), SIM_DEFAULTS)
    if name == "piper":  # PiPER over CAN (piper_sdk); `emulate=True` starts the CAN emulator
        from captain_ros.backends.piper import make_piper

        return make_piper(scene, **kw)
    from captain_ros.core.errors import UnknownNameError

    raise UnknownNameError("backend", name, list(BACKENDS))


__all__ = ["BACKENDS", "Backend", "Kinematics", "make_backend"]
