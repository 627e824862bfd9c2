"""Backends: one small interface (:class:`Backend`) for simulation and hardware.

Every backend is a folder of the same shape (``config.py``, ``backend.py``, ``make()``), named in
one registry (:mod:`.registry`); :func:`make_backend` builds one by name inside the safety layer.
docs/backends.md describes the shape and how a new backend fits in.
"""

from __future__ import annotations

import os

from captain_ros.backends.base import Backend, Kinematics
from captain_ros.backends.registry import BACKENDS, make_backend

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must precede `import mujoco`

__all__ = ["BACKENDS", "Backend", "Kinematics", "make_backend"]
