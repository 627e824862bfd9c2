"""Backends: one small interface (:class:`Backend`) for simulation and hardware."""

from captain_ros.backends.base import Backend, Kinematics

__all__ = ["Backend", "Kinematics"]
