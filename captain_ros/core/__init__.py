"""Typed data contracts shared by every layer (no ROS, no torch)."""

from captain_ros.core.errors import (
    CaptainError,
    EStopError,
    InvalidArgumentError,
    NotSupportedError,
    UnknownNameError,
)
from captain_ros.core.geometry import (
    Pose,
    matrix_to_quat,
    quat_conjugate,
    quat_multiply,
    quat_to_matrix,
)
from captain_ros.core.result import FailureCategory, Result
from captain_ros.core.types import (
    ArmSpec,
    CameraFrame,
    ForceGuard,
    GripperState,
    JointState,
    RobotSpec,
    TickReport,
)

__all__ = [
    "ArmSpec",
    "CameraFrame",
    "CaptainError",
    "EStopError",
    "FailureCategory",
    "ForceGuard",
    "GripperState",
    "InvalidArgumentError",
    "JointState",
    "NotSupportedError",
    "Pose",
    "Result",
    "RobotSpec",
    "TickReport",
    "UnknownNameError",
    "matrix_to_quat",
    "quat_conjugate",
    "quat_multiply",
    "quat_to_matrix",
]
