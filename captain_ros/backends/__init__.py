"""Backends: one small interface (:class:`Backend`) for simulation and hardware."""

from __future__ import annotations

import os
from typing import Any

from captain_ros.backends.base import Backend, Kinematics
from captain_ros.core.errors import UnknownNameError
from captain_ros.core.scene import SceneSpec

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must precede `import mujoco`

BACKENDS = ("mujoco", "fake", "piper", "ros_arm", "robosuite")


def make_backend(name: str, scene: SceneSpec | None = None, **kw: Any) -> Backend:
    """Build a backend by name (``"mujoco"``, ``"fake"``, ``"piper"``, ``"ros_arm"``) for ``scene``, wrapped in
    the safety layer (:class:`~captain_ros.backends.safety.SafeBackend`) that every backend shares.

    Args:
        name: Backend name.
        scene: A :class:`~captain_ros.core.scene.SceneSpec` (``None``: the empty table); tasks
            sample one with ``task.sample(seed)``.
        **kw: Passed to the backend constructor (e.g. ``rig="piper_dual"`` without a scene).
    """
    from captain_ros.backends.safety import SIM_DEFAULTS, SafeBackend

    if name == "mujoco":
        from captain_ros.backends.mujoco import MujocoBackend

        return SafeBackend(MujocoBackend(scene, **kw), SIM_DEFAULTS)
    if name == "fake":
        from captain_ros.backends.fake import FakeBackend

        return SafeBackend(FakeBackend(scene=scene, **kw), SIM_DEFAULTS)
    if name == "robosuite":  # robosuite's own tasks (optional extra; docs/robosuite.md)
        from captain_ros.backends.robosuite.backend import RobosuiteBackend

        return SafeBackend(RobosuiteBackend(scene, **kw), SIM_DEFAULTS)  # type: ignore[arg-type]
    if name == "piper":  # PiPER over CAN (piper_sdk); `emulate=True` starts the CAN emulator
        from captain_ros.backends.piper import make_piper

        return make_piper(scene, **kw)
    if name == "ros_arm":  # any ros2_control arm over ROS 2 (XR1: config/xr1.yaml)
        from captain_ros.backends.ros_arm import make_ros_arm

        return make_ros_arm(scene, **kw)
    raise UnknownNameError("backend", name, list(BACKENDS))


__all__ = ["BACKENDS", "Backend", "Kinematics", "make_backend"]
