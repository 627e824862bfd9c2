"""What the ROS arm backend needs from the ROS graph, without importing ROS.

:class:`ArmTransport` is implemented over rclpy by
:class:`captain_ros.ros.arm_bridge.transport.RclpyArmTransport` (a node of its own in its own
context and executor thread). The backend logic (:mod:`.backend`) sees only these plain types,
so it stays ROS-free and unit-testable.

The ros layer registers its transport (:func:`register_transport`, called when
:mod:`captain_ros.ros.arm_bridge` is imported: the robot node and the ``captain`` command line
import it); a backend built without an injected transport takes the registered one
(:func:`default_transport`). This package never imports the ros layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from captain_ros.core.errors import NotSupportedError

if TYPE_CHECKING:
    from captain_ros.backends.ros_arm.config import RosArmConfig


@dataclass(frozen=True)
class JointSample:
    """The newest ``/joint_states`` values by joint name, and when they arrived.

    Attributes:
        position / velocity / effort: Joint name -> value (rad, rad/s, N m; m, m/s, N for
            prismatic joints); joints missing from a message keep their last value.
        received_s: Arrival time of the newest message [s, monotonic clock].
    """

    position: Mapping[str, float]
    velocity: Mapping[str, float]
    effort: Mapping[str, float]
    received_s: float

    def vector(self, field: str, names: Sequence[str]) -> np.ndarray:
        values = getattr(self, field)
        return np.array([float(values.get(n, 0.0)) for n in names])

    def has(self, names: Sequence[str]) -> bool:
        return all(n in self.position for n in names)


@dataclass(frozen=True)
class ImageSample:
    """One colour + aligned depth pair of a camera (same header stamp) with its intrinsics.

    Attributes:
        color: (H, W, 3) uint8 RGB.
        depth: (H, W) depth as published (uint16 device units or float32 metres).
        encoding: ``16UC1`` or ``32FC1``.
        k: (3, 3) intrinsics of the colour stream (``CameraInfo.k``).
        stamp_s: The header stamp [s]; ``received_s``: arrival of the later of the two [s,
            monotonic clock].
    """

    color: np.ndarray
    depth: np.ndarray
    encoding: str
    k: np.ndarray
    stamp_s: float
    received_s: float


@dataclass(frozen=True)
class GoalState:
    """The latest trajectory goal of an arm.

    Attributes:
        status: ``pending`` | ``accepted`` | ``rejected`` | ``succeeded`` | ``aborted`` |
            ``canceled`` | ``none`` (no goal sent yet).
        error: The driver's ``error_string`` (or why it was rejected).
    """

    status: str
    error: str = ""


class ArmTransport(Protocol):
    """The ROS interfaces of an arm driver, as the backend uses them (all non-blocking unless
    documented; times are monotonic seconds)."""

    def joint_sample(self) -> JointSample | None:
        """The newest joint state (``None`` before the first message)."""

    def wait_joint_sample(self, after_s: float, timeout_s: float) -> JointSample | None:
        """Block until a joint state received after ``after_s`` arrives (``None`` on timeout)."""

    def server_ready(self, arm: str, timeout_s: float = 0.0) -> bool:
        """Whether ``arm``'s FollowJointTrajectory server is available (waits up to ``timeout_s``)."""

    def send_trajectory(
        self,
        arm: str,
        joints: Sequence[str],
        points: Sequence[tuple[np.ndarray, float]],
        timeout_s: float,
    ) -> GoalState:
        """Send a goal of ``(q, time_from_start_s)`` points (it preempts the previous goal) and
        wait up to ``timeout_s`` for the driver's accept/reject."""

    def goal_state(self, arm: str) -> GoalState:
        """State of ``arm``'s latest trajectory goal."""

    def cancel(self, arm: str) -> None:
        """Cancel ``arm``'s active trajectory goal (the controller holds its position)."""

    def send_gripper(self, arm: str, opening_m: float, max_effort_n: float) -> None:
        """Command the jaw opening [m] (GripperCommand goal or the configured topic)."""

    def image(self, camera: str) -> ImageSample | None:
        """The newest complete frame of ``camera`` (``None`` before the first)."""

    def wait_image(self, camera: str, after_s: float, timeout_s: float) -> ImageSample | None:
        """Block until a frame of ``camera`` received after ``after_s`` arrives."""

    def ground_truth(self) -> Any:
        """Simulation drivers only: the simulator's privileged state as a dict."""

    def close(self) -> None:
        """Destroy the node and stop its executor."""


TransportFactory = Callable[["RosArmConfig"], ArmTransport]
_registered: list[TransportFactory] = []


def register_transport(factory: TransportFactory) -> None:
    """Make ``factory(config)`` the transport of backends built without one (the ros layer's
    :class:`~captain_ros.ros.arm_bridge.transport.RclpyArmTransport`); a later call replaces it."""
    _registered[:] = [factory]


def default_transport(config: RosArmConfig) -> ArmTransport:
    """A new transport from the registered factory (else :class:`NotSupportedError`)."""
    if not _registered:
        raise NotSupportedError(
            "backend ros_arm needs the ROS 2 transport, which the ros layer registers: import "
            "captain_ros.ros.arm_bridge first (the robot node and the captain command do), or "
            "pass transport="
        )
    return _registered[0](config)


__all__ = [
    "ArmTransport",
    "GoalState",
    "ImageSample",
    "JointSample",
    "TransportFactory",
    "default_transport",
    "register_transport",
]
