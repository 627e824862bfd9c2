"""The kinematic fake rig: a device-like backend without physics (see :mod:`.backend`)."""

from captain_ros.backends.fake.backend import FakeBackend
from captain_ros.backends.fake.kinematics import FakeKinematics
from captain_ros.backends.fake.scene import FakeBox, boxes_from_scene, matrix_rpy, rpy_matrix

__all__ = ["FakeBackend", "FakeBox", "FakeKinematics", "boxes_from_scene", "matrix_rpy", "rpy_matrix"]
