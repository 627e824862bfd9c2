"""A ROS 2 arm bridge (the XR1 arm, any ros2_control arm): backend, configuration, kinematic twin.

:func:`make_ros_arm` builds the guarded backend (wrapped in the safety layer) from a config file.
The backend logic is ROS-free; the ROS side (:mod:`captain_ros.ros.arm_bridge`: an rclpy node
speaking ``FollowJointTrajectory``, ``GripperCommand``, ``/joint_states`` and camera topics) is
imported only when a backend is built without an injected transport.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from captain_ros.backends.ros_arm.backend import RosArmBackend
from captain_ros.backends.ros_arm.config import RosArmConfig
from captain_ros.backends.ros_arm.transport import ArmTransport
from captain_ros.data import data_path

CONFIG_DIR = data_path("config")
DEFAULT_CONFIG = CONFIG_DIR / "xr1.yaml"


def make_ros_arm(scene: Any = None, *, config: str | Path | RosArmConfig | None = None,
                 transport: ArmTransport | None = None, enable: bool = True) -> Any:
    """The ROS arm as a guarded backend (:class:`SafeBackend` around :class:`RosArmBackend`).

    Args:
        scene: Ignored (the driver owns the world; a simulated driver loads its own scene).
        config: Config file or object (default ``config/xr1.yaml``).
        transport: The ROS side (default: a new
            :class:`~captain_ros.ros.arm_bridge.transport.RclpyArmTransport`).
        enable: Run the safety layer's checks and the driver checks before returning
            (``captain hw check``: False).
    """
    from captain_ros.backends.safety import SafeBackend

    cfg = config if isinstance(config, RosArmConfig) else RosArmConfig.load(config or DEFAULT_CONFIG)
    if transport is None:
        from captain_ros.ros.arm_bridge.transport import RclpyArmTransport  # the ROS layer

        transport = RclpyArmTransport(cfg)
    try:
        backend = RosArmBackend(cfg, transport)
    except Exception:
        transport.close()
        raise
    safe = SafeBackend(backend, cfg.safety)
    if enable:
        try:
            safe.enable()
        except Exception:
            safe.close()
            raise
    return safe


__all__ = ["ArmTransport", "RosArmBackend", "RosArmConfig", "make_ros_arm"]
