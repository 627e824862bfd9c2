"""The ROS 2 arm bridge (rclpy half): the transport of :mod:`captain_ros.backends.ros_arm` and the
MuJoCo-backed driver node it is tested against.

Importing this package registers the transport with the backend
(:func:`captain_ros.backends.ros_arm.transport.register_transport`), so that a ``ros_arm``
backend built without one speaks ROS 2; rclpy itself is imported only when a transport is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from captain_ros.backends.ros_arm.transport import register_transport

if TYPE_CHECKING:
    from captain_ros.backends.ros_arm.config import RosArmConfig
    from captain_ros.backends.ros_arm.transport import ArmTransport


def rclpy_transport(config: RosArmConfig) -> ArmTransport:
    """A new :class:`~captain_ros.ros.arm_bridge.transport.RclpyArmTransport` for ``config``."""
    from captain_ros.ros.arm_bridge.transport import RclpyArmTransport

    return RclpyArmTransport(config)


register_transport(rclpy_transport)

__all__ = ["rclpy_transport"]
