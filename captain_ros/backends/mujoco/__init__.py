"""MuJoCo simulation backend for the AgileX PiPER rigs (``piper``, ``piper_dual``)."""

from captain_ros.backends.mujoco import render as _render  # noqa: F401 - sets MUJOCO_GL=egl first
from captain_ros.backends.mujoco.backend import MujocoBackend
from captain_ros.backends.mujoco.kinematics import MujocoKinematics
from captain_ros.backends.mujoco.snapshot import MujocoSnapshot

__all__ = ["MujocoBackend", "MujocoKinematics", "MujocoSnapshot"]
