"""A ROS 2 arm bridge (the XR1 arm, any ros2_control arm): backend, configuration, kinematic twin.

:func:`make` builds the backend from a config file (default ``config/xr1.yaml``). The backend
logic is ROS-free; the ROS side (:mod:`captain_ros.ros.arm_bridge`: an rclpy node speaking
``FollowJointTrajectory``, ``GripperCommand``, ``/joint_states`` and camera topics) is the
transport that the ros layer registers (:func:`~.transport.register_transport`); this package
never imports it. The safety layer and enabling are the registry's
(:func:`captain_ros.backends.registry.make_backend`).
"""

from __future__ import annotations

from pathlib import Path

from captain_ros.backends.ros_arm.backend import RosArmBackend
from captain_ros.backends.ros_arm.config import RosArmConfig
from captain_ros.backends.ros_arm.transport import (
    ArmTransport,
    default_transport,
    register_transport,
)
from captain_ros.core.scene import SceneSpec
from captain_ros.core.share import share_path


def make(
    scene: SceneSpec | None = None,
    *,
    config: str | Path | RosArmConfig | None = None,
    transport: ArmTransport | None = None,
) -> RosArmBackend:
    """The ROS arm (unguarded: :func:`~captain_ros.backends.registry.make_backend` wraps it).

    Args:
        scene: Ignored (the driver owns the world; a simulated driver loads its own scene).
        config: Config file or object (default ``config/xr1.yaml``).
        transport: The ROS side (default: a new one from the registered factory, the ros
            layer's :class:`~captain_ros.ros.arm_bridge.transport.RclpyArmTransport`).
    """
    cfg = (
        config
        if isinstance(config, RosArmConfig)
        else RosArmConfig.load(config or share_path("config", "xr1.yaml"))
    )
    transport = default_transport(cfg) if transport is None else transport
    try:
        return RosArmBackend(cfg, transport)
    except Exception:
        transport.close()
        raise


__all__ = ["ArmTransport", "RosArmBackend", "RosArmConfig", "make", "register_transport"]
