"""Configuration of a ROS 2 arm (``config/xr1.yaml``, ``config/ros_arm_piper.yaml``).

The arm is any ros2_control arm: a ``FollowJointTrajectory`` action per arm, ``/joint_states``,
a gripper (``GripperCommand`` action or a ``std_msgs/Float64`` position topic) and RGB-D camera
topics (``sensor_msgs/Image`` colour + aligned depth, ``CameraInfo``). Its kinematics come from
the arm's URDF or MJCF (``model``), which the user supplies; limits from the model or this file;
camera extrinsics from calibration files. Every key is validated and an unknown key is refused
with the list of valid keys. Paths: ``package://captain_ros/...`` is a packaged file; a relative
path is relative to the config file's folder, or to the working directory for a packaged config
(:func:`captain_ros.core.share.config_base`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.backends.rig_config import ContactConfig, check_keys, read_rig_file
from captain_ros.backends.safety import SafetyConfig
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.share import config_base, resolve_path

DEPTH_ENCODINGS = ("16UC1", "32FC1")


def _named(section: str, data: Any) -> dict[str, Any]:
    """A mapping keyed by names (arms, cameras): any key, values checked by the caller."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise InvalidArgumentError(
            f"{section} must be a mapping of names, got {type(data).__name__}"
        )
    return {str(k): v for k, v in data.items()}


def _floats(value: Any, name: str, n: int | None = None) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{name} must be a list of numbers, got {value!r}") from exc
    if n is not None and len(out) != n:
        raise InvalidArgumentError(f"{name} must have {n} numbers, got {len(out)}")
    if not all(math.isfinite(v) for v in out):
        raise InvalidArgumentError(f"{name} must be finite")
    return out


ROS_ARM_SAFETY = SafetyConfig(
    workspace_margin_m=0.0,
    velocity_scale=1.0,
    max_accel_rad_s2=5.0,
    max_contact_force_n=60.0,
    max_effort_nm=20.0,
    watchdog_s=0.2,
    max_feedback_age_s=0.1,
    twin_tolerance_m=0.005,
    twin_tolerance_rad=0.02,
)
"""Defaults of a ROS arm: every guard on; set per arm in its config (docs/hardware.md)."""


@dataclass(frozen=True)
class GripperConfig:
    """The arm's parallel gripper.

    Attributes:
        action: ``control_msgs/GripperCommand`` action name (``""``: use ``topic``).
        topic: ``std_msgs/Float64`` jaw-opening command topic [m] when there is no action.
        joints: Gripper joints in ``/joint_states``; opening = sum of their positions x
            ``opening_scale`` [m].
        opening_scale: Metres of opening per unit of the summed joint positions.
        model_joints: Joints of the model that show the jaw in the twin (default ``joints``).
        max_opening_m: Full opening between the pads [m].
        max_effort_n: ``max_effort`` of the GripperCommand goals [N].
        pad_size_m: (length, width, thickness) of one pad [m].
        holding_effort: Summed joint effort above which a stalled jaw holds something (units of
            the driver's effort field: N for prismatic fingers).
    """

    action: str = ""
    topic: str = ""
    joints: tuple[str, ...] = ()
    opening_scale: float = 1.0
    model_joints: tuple[str, ...] = ()
    max_opening_m: float = 0.07
    max_effort_n: float = 12.0
    pad_size_m: tuple[float, float, float] = (0.03, 0.02, 0.005)
    holding_effort: float = 2.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "joints", tuple(str(j) for j in self.joints))
        object.__setattr__(
            self, "model_joints", tuple(str(j) for j in self.model_joints) or self.joints
        )
        object.__setattr__(self, "pad_size_m", _floats(self.pad_size_m, "gripper.pad_size_m", 3))
        if bool(self.action) == bool(self.topic):
            raise InvalidArgumentError(
                "gripper: set exactly one of action (GripperCommand) or "
                "topic (std_msgs/Float64 opening [m])"
            )
        if not self.joints:
            raise InvalidArgumentError("gripper.joints: name the gripper joint(s) of /joint_states")
        if not (self.opening_scale > 0 and self.max_opening_m > 0 and self.max_effort_n > 0):
            raise InvalidArgumentError("gripper: opening_scale, max_opening_m, max_effort_n > 0")


@dataclass(frozen=True)
class ArmConfig:
    """One arm of the rig.

    Attributes:
        joints: Arm joint names, base to tip, as in ``/joint_states``, the trajectory goals and
            the model.
        trajectory_action: ``control_msgs/FollowJointTrajectory`` action of the arm's controller.
        tcp_site: Site of the model at the tool point (between the pads, z = approach, y = jaw
            axis), or ``""`` to use ``tcp_body`` + ``tcp_offset_m``.
        tcp_body: Body (URDF link) carrying the tool point when there is no site.
        tcp_offset_m: Tool point in ``tcp_body``'s frame [m].
        flange_body: Body whose frame a wrist camera's hand-eye calibration is relative to
            (default: the body of the tool point).
        lower_rad / upper_rad: Joint limits [rad] (default: the model's; narrower values win).
        max_velocity_rad_s: Joint velocity limits [rad/s] (default: URDF ``<limit velocity>``;
            required for an MJCF model, which has none).
        reach_m: Largest shoulder-to-tool distance [m].
        gripper: The gripper.
    """

    joints: tuple[str, ...]
    trajectory_action: str
    gripper: GripperConfig
    tcp_site: str = ""
    tcp_body: str = ""
    tcp_offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    flange_body: str = ""
    lower_rad: tuple[float, ...] = ()
    upper_rad: tuple[float, ...] = ()
    max_velocity_rad_s: tuple[float, ...] = ()
    reach_m: float = 0.8

    def __post_init__(self) -> None:
        object.__setattr__(self, "joints", tuple(str(j) for j in self.joints))
        n = len(self.joints)
        if n == 0 or len(set(self.joints)) != n:
            raise InvalidArgumentError("arm joints: a non-empty list of distinct names")
        if not self.trajectory_action.startswith("/"):
            raise InvalidArgumentError(
                "trajectory_action must be an absolute action name "
                f"(/…/follow_joint_trajectory), got {self.trajectory_action!r}"
            )
        if not (self.tcp_site or self.tcp_body):
            raise InvalidArgumentError("arm: set tcp_site, or tcp_body (+ tcp_offset_m)")
        object.__setattr__(self, "tcp_offset_m", _floats(self.tcp_offset_m, "tcp_offset_m", 3))
        for name in ("lower_rad", "upper_rad", "max_velocity_rad_s"):
            v = getattr(self, name)
            object.__setattr__(self, name, _floats(v, name, n) if len(v) else ())
        if self.max_velocity_rad_s and min(self.max_velocity_rad_s) <= 0:
            raise InvalidArgumentError("max_velocity_rad_s must be positive")
        if not self.reach_m > 0:
            raise InvalidArgumentError("reach_m must be positive")


@dataclass(frozen=True)
class CameraConfig:
    """One RGB-D camera on ROS topics (a RealSense ROS driver publishes exactly these).

    Attributes:
        image_topic: ``sensor_msgs/Image`` colour (``rgb8`` or ``bgr8``).
        depth_topic: ``sensor_msgs/Image`` depth aligned to colour (``16UC1`` in
            ``depth_scale_m`` units, or ``32FC1`` metres), same header stamp as the colour image.
        info_topic: ``sensor_msgs/CameraInfo`` of the colour stream (K).
        calibration: YAML with ``world_from_optical`` (mount ``world``) or
            ``flange_from_optical`` (a wrist camera: the arm's name) as a 4x4 transform.
        mount: ``world`` or the name of the arm that carries the camera.
        depth_scale_m: Metres per ``16UC1`` depth unit.
    """

    image_topic: str
    depth_topic: str
    info_topic: str
    calibration: str
    mount: str = "world"
    depth_scale_m: float = 0.001

    def __post_init__(self) -> None:
        if not self.depth_scale_m > 0:
            raise InvalidArgumentError("camera depth_scale_m must be positive")


@dataclass(frozen=True)
class RosArmConfig:
    """A ROS 2 arm rig.

    Attributes:
        name: Rig name (``RobotSpec.name``).
        model: The arm's URDF or MJCF (kinematic twin: IK, collisions, camera poses, gravity).
        arms: Arm name -> :class:`ArmConfig` (``arm`` for a single arm).
        cameras: Camera name -> :class:`CameraConfig` (``head`` is the scene camera).
        head_camera: The camera that sees the whole table.
        base_xyz_m / base_rpy_rad: Pose of the model's world frame in the captain world frame.
        workspace_min_m / workspace_max_m: The tool workspace box [m] (captain world frame).
        joint_states_topic: ``sensor_msgs/JointState`` topic of the driver.
        ground_truth_service: Simulation drivers only: a ``captain_ros_interfaces/PrivilegedState``
            service for the host-success predicate (``""`` on hardware: none).
        domain_id: ROS domain of the driver (``-1``: ``ROS_DOMAIN_ID`` of the environment).
        server_timeout_s: How long connecting waits for the action servers [s].
        feedback_timeout_s: How long connecting waits for the first ``/joint_states`` [s].
        goal_timeout_s: How long a trajectory goal may wait for acceptance [s].
        camera_timeout_s: How long a capture waits for a frame newer than the request [s].
        contact: Contact detection.
        safety: The safety layer's limits.
    """

    model: str
    arms: dict[str, ArmConfig]
    cameras: dict[str, CameraConfig] = field(default_factory=dict)
    name: str = "ros_arm"
    head_camera: str = "head"
    base_xyz_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    base_rpy_rad: tuple[float, float, float] = (0.0, 0.0, 0.0)
    workspace_min_m: tuple[float, float, float] = (-0.15, -0.65, -0.02)
    workspace_max_m: tuple[float, float, float] = (0.75, 0.65, 0.60)
    joint_states_topic: str = "/joint_states"
    ground_truth_service: str = ""
    domain_id: int = -1
    server_timeout_s: float = 5.0
    feedback_timeout_s: float = 5.0
    goal_timeout_s: float = 0.5
    camera_timeout_s: float = 3.0
    contact: ContactConfig = field(default_factory=ContactConfig)
    safety: SafetyConfig = field(default_factory=lambda: ROS_ARM_SAFETY)

    def __post_init__(self) -> None:
        if not Path(self.model).is_file():
            raise InvalidArgumentError(
                f"ros_arm model {self.model} does not exist: supply the "
                "arm's URDF or MJCF (no public XR1 model ships)"
            )
        if not self.arms:
            raise InvalidArgumentError("ros_arm.arms: configure at least one arm")
        for k in ("base_xyz_m", "base_rpy_rad", "workspace_min_m", "workspace_max_m"):
            object.__setattr__(self, k, _floats(getattr(self, k), k, 3))
        if any(lo >= hi for lo, hi in zip(self.workspace_min_m, self.workspace_max_m, strict=True)):
            raise InvalidArgumentError("workspace_min_m must be below workspace_max_m")
        for name, cam in self.cameras.items():
            if cam.mount != "world" and cam.mount not in self.arms:
                raise InvalidArgumentError(
                    f"camera {name} mount {cam.mount!r}; valid: world, {', '.join(self.arms)}"
                )
        if self.cameras and self.head_camera not in self.cameras:
            raise InvalidArgumentError(
                f"head_camera {self.head_camera!r} is not a configured "
                f"camera ({', '.join(self.cameras)})"
            )
        if not -1 <= int(self.domain_id) <= 101:
            raise InvalidArgumentError("domain_id must be -1 (environment) or 0..101")
        for k in ("server_timeout_s", "feedback_timeout_s", "goal_timeout_s", "camera_timeout_s"):
            if not getattr(self, k) > 0:
                raise InvalidArgumentError(f"{k} must be positive")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base_dir: Path | None = None) -> RosArmConfig:
        """Build from the ``ros_arm:`` mapping; relative paths are resolved against ``base_dir``
        (default: the working directory)."""
        d = check_keys("ros_arm", data, cls)

        def path(p: Any) -> str:
            return resolve_path(p, base_dir or Path.cwd())

        if "model" not in d or "arms" not in d:
            raise InvalidArgumentError("ros_arm needs model (URDF/MJCF file) and arms")
        arms = {}
        for name, a in _named("ros_arm.arms", d.pop("arms")).items():
            a = check_keys(f"ros_arm.arms.{name}", a, ArmConfig)
            g = check_keys(f"ros_arm.arms.{name}.gripper", a.pop("gripper", None), GripperConfig)
            if "joints" not in a or "trajectory_action" not in a:
                raise InvalidArgumentError(
                    f"ros_arm.arms.{name} needs joints and trajectory_action"
                )
            arms[str(name)] = ArmConfig(gripper=GripperConfig(**g), **a)
        cams = {}
        for name, c in _named("ros_arm.cameras", d.pop("cameras", None)).items():
            c = check_keys(f"ros_arm.cameras.{name}", c, CameraConfig)
            missing = [
                k
                for k in ("image_topic", "depth_topic", "info_topic", "calibration")
                if not c.get(k)
            ]
            if missing:
                raise InvalidArgumentError(f"ros_arm.cameras.{name} needs {', '.join(missing)}")
            c["calibration"] = path(c["calibration"])
            cams[str(name)] = CameraConfig(**c)
        contact = ContactConfig(
            **check_keys("ros_arm.contact", d.pop("contact", None), ContactConfig)
        )
        safety = SafetyConfig.from_dict(d.pop("safety")) if "safety" in d else ROS_ARM_SAFETY
        d["model"] = path(d["model"])
        return cls(arms=arms, cameras=cams, contact=contact, safety=safety, **d)

    @classmethod
    def load(cls, path: str | Path) -> RosArmConfig:
        """Read ``path`` (its top-level ``ros_arm:`` section)."""
        p, raw = read_rig_file(path, "ros_arm")
        if not isinstance(raw, dict) or set(raw) != {"ros_arm"}:
            raise InvalidArgumentError(
                f"{p}: expected one top-level key ros_arm, got "
                f"{', '.join(map(str, raw)) if isinstance(raw, dict) else raw}"
            )
        return cls.from_dict(raw["ros_arm"], config_base(p))


__all__ = [
    "ROS_ARM_SAFETY",
    "ArmConfig",
    "CameraConfig",
    "ContactConfig",
    "GripperConfig",
    "RosArmConfig",
    "check_keys",
]
