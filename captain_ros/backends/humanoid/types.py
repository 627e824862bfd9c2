"""Typed data contracts of the humanoid bridge (SI units, world frame REP 103, yaw about +z).

A humanoid's *base* is its floating base as a whole-body/locomotion controller sees it: a planar
pose ``(x_m, y_m, yaw_rad)``, a pelvis height offset and a torso tilt. Commands are planar body-frame
velocities (with a watchdog), pelvis-height targets and arm posture targets; every command call
returns what was actually applied after clipping to the robot's limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from captain_ros.core.errors import InvalidArgumentError


def _finite(name: str, *values: float) -> None:
    for v in values:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise InvalidArgumentError(f"{name} must be finite numbers, got {v!r}")


def wrap_angle(a: float) -> float:
    """``a`` [rad] wrapped to [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


@dataclass(frozen=True)
class Pose2D:
    """A planar pose in the world frame: position [m] and heading ``yaw_rad`` about +z."""

    x_m: float
    y_m: float
    yaw_rad: float

    def __post_init__(self) -> None:
        _finite("Pose2D", self.x_m, self.y_m, self.yaw_rad)

    @property
    def xy(self) -> np.ndarray:
        return np.array([self.x_m, self.y_m])

    def heading(self) -> np.ndarray:
        """Unit vector of the robot's forward (+x body) axis in the world frame."""
        return np.array([math.cos(self.yaw_rad), math.sin(self.yaw_rad)])

    def to_body(self, world_xy: np.ndarray) -> np.ndarray:
        """A world-frame planar vector expressed in this pose's body frame."""
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        v = np.asarray(world_xy, dtype=float)
        return np.array([c * v[0] + s * v[1], -s * v[0] + c * v[1]])

    def to_world(self, body_xy: np.ndarray) -> np.ndarray:
        """A body-frame planar vector expressed in the world frame."""
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        v = np.asarray(body_xy, dtype=float)
        return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])

    def to_dict(self) -> dict[str, float]:
        return {"x_m": self.x_m, "y_m": self.y_m, "yaw_rad": self.yaw_rad}


@dataclass(frozen=True)
class BaseLimits:
    """Limits a locomotion controller accepts for planar velocity commands (body frame).

    Attributes:
        forward_m_s / backward_m_s / lateral_m_s: Speed limits along body +x, -x and +-y [m/s].
        yaw_rate_rad_s: Turn-rate limit [rad/s].
        accel_m_s2 / yaw_accel_rad_s2: Acceleration limits [m/s^2], [rad/s^2].
        height_min_m / height_max_m: Pelvis height offset range relative to nominal [m].
        height_rate_m_s: Pelvis height rate limit [m/s].
        command_timeout_s: Watchdog: a velocity command not refreshed within this time is replaced
            by zero velocity [s].
        max_tilt_rad: Torso tilt beyond which the robot counts as fallen (controllers stop) [rad].
    """

    forward_m_s: float = 0.5
    backward_m_s: float = 0.3
    lateral_m_s: float = 0.3
    yaw_rate_rad_s: float = 0.6
    accel_m_s2: float = 0.8
    yaw_accel_rad_s2: float = 1.5
    height_min_m: float = -0.20
    height_max_m: float = 0.02
    height_rate_m_s: float = 0.10
    command_timeout_s: float = 0.5
    max_tilt_rad: float = 0.35

    def __post_init__(self) -> None:
        _finite(
            "BaseLimits",
            self.forward_m_s,
            self.backward_m_s,
            self.lateral_m_s,
            self.yaw_rate_rad_s,
            self.accel_m_s2,
            self.yaw_accel_rad_s2,
            self.height_min_m,
            self.height_max_m,
            self.height_rate_m_s,
            self.command_timeout_s,
            self.max_tilt_rad,
        )
        if (
            min(
                self.forward_m_s,
                self.backward_m_s,
                self.lateral_m_s,
                self.yaw_rate_rad_s,
                self.accel_m_s2,
                self.yaw_accel_rad_s2,
                self.height_rate_m_s,
                self.command_timeout_s,
                self.max_tilt_rad,
            )
            <= 0
        ):
            raise InvalidArgumentError("BaseLimits: speeds, rates, timeout and tilt must be > 0")
        if not self.height_min_m < 0.0 < self.height_max_m:
            raise InvalidArgumentError("BaseLimits: height range must contain 0 (nominal)")


@dataclass(frozen=True)
class BaseVelocity:
    """A planar velocity command in the robot's body frame: ``vx`` forward, ``vy`` left [m/s],
    ``wz`` counter-clockwise [rad/s]."""

    vx_m_s: float = 0.0
    vy_m_s: float = 0.0
    wz_rad_s: float = 0.0

    def __post_init__(self) -> None:
        _finite("BaseVelocity", self.vx_m_s, self.vy_m_s, self.wz_rad_s)

    def clipped(self, lim: BaseLimits) -> BaseVelocity:
        """This command clipped to ``lim`` (what the controller will track)."""
        vx = min(max(self.vx_m_s, -lim.backward_m_s), lim.forward_m_s)
        vy = min(max(self.vy_m_s, -lim.lateral_m_s), lim.lateral_m_s)
        wz = min(max(self.wz_rad_s, -lim.yaw_rate_rad_s), lim.yaw_rate_rad_s)
        return BaseVelocity(vx, vy, wz)

    def to_dict(self) -> dict[str, float]:
        return {"vx_m_s": self.vx_m_s, "vy_m_s": self.vy_m_s, "wz_rad_s": self.wz_rad_s}


@dataclass(frozen=True)
class ArmJoints:
    """The 14 regulated arm joints of one humanoid (7 per arm, left then right).

    Attributes:
        joint_names: Joint names (robot prefix included).
        lower_rad / upper_rad: Position limits [rad].
        torque_limit_nm: Actuator torque limits [N m].
        kp_nm_rad / kd_nm_s_rad: PD gains of the support adapter (paper: 24 and 1.5).
    """

    joint_names: tuple[str, ...]
    lower_rad: np.ndarray
    upper_rad: np.ndarray
    torque_limit_nm: np.ndarray
    kp_nm_rad: float = 24.0
    kd_nm_s_rad: float = 1.5

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        for attr in ("lower_rad", "upper_rad", "torque_limit_nm"):
            arr = np.asarray(getattr(self, attr), dtype=float)
            if arr.shape != (n,) or not np.all(np.isfinite(arr)):
                raise InvalidArgumentError(f"ArmJoints.{attr} must be {n} finite numbers")
            arr.setflags(write=False)
            object.__setattr__(self, attr, arr)
        if np.any(self.lower_rad >= self.upper_rad) or np.any(self.torque_limit_nm <= 0):
            raise InvalidArgumentError("ArmJoints: lower < upper and torque limits > 0 required")

    def clip(self, q: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(q, dtype=float), self.lower_rad, self.upper_rad)


@dataclass(frozen=True)
class HumanoidSpec:
    """One humanoid of the pair.

    Attributes:
        name: Robot name (``"robot_a"``, ``"robot_b"``).
        base_limits: What its locomotion controller accepts.
        arms: Its regulated arm joints.
        nominal_height_m: Nominal pelvis height above the floor [m].
    """

    name: str
    base_limits: BaseLimits
    arms: ArmJoints
    nominal_height_m: float


@dataclass(frozen=True)
class PairSpec:
    """The humanoid pair: robots and control rates.

    Attributes:
        robots: The two humanoids.
        control_dt_s: Period of the base/arm controllers [s] (50 Hz).
        physics_dt_s: Period of the command writer / physics step [s] (500 Hz).
    """

    robots: tuple[HumanoidSpec, ...]
    control_dt_s: float = 0.02
    physics_dt_s: float = 0.002

    @property
    def robot_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.robots)

    def robot(self, name: str) -> HumanoidSpec:
        for r in self.robots:
            if r.name == name:
                return r
        from captain_ros.core.errors import UnknownNameError

        raise UnknownNameError("robot", name, self.robot_names)


@dataclass(frozen=True)
class HumanoidState:
    """Measured state of one humanoid.

    Attributes:
        name: Robot name.
        base: Planar base pose in the world frame.
        base_velocity: Measured planar velocity in the body frame.
        height_offset_m: Pelvis height relative to nominal [m].
        tilt_rad: Torso tilt from vertical [rad].
        arm_q_rad / arm_target_rad: Measured arm joint positions and the PD targets [rad].
        arm_torque_nm: Arm actuator torques [N m].
        palm_force_n: Normal contact force on the left and right palm+forearm proxies [N].
        fallen: The torso tilted past the limit; controllers hold until reset.
        stamp_s: Time of the measurement on the bridge clock [s].
    """

    name: str
    base: Pose2D
    base_velocity: BaseVelocity
    height_offset_m: float
    tilt_rad: float
    arm_q_rad: np.ndarray
    arm_target_rad: np.ndarray
    arm_torque_nm: np.ndarray
    palm_force_n: tuple[float, float]
    fallen: bool
    stamp_s: float

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "base": self.base.to_dict(),
            "base_velocity": self.base_velocity.to_dict(),
            "height_offset_m": self.height_offset_m,
            "tilt_rad": self.tilt_rad,
            "arm_q_rad": [float(v) for v in self.arm_q_rad],
            "arm_target_rad": [float(v) for v in self.arm_target_rad],
            "arm_torque_nm": [float(v) for v in self.arm_torque_nm],
            "palm_force_n": list(self.palm_force_n),
            "fallen": self.fallen,
            "stamp_s": self.stamp_s,
        }


@dataclass(frozen=True)
class AdvanceReport:
    """What happened while the controllers ran for a while.

    Attributes:
        duration_s: Time that actually passed [s] (shorter when stopped).
        stopped: Stopped early (e-stop latched or a robot fell).
        reason: Why it stopped ("" when it ran the full time).
        watchdog_expired: Robots whose velocity command expired during the interval.
    """

    duration_s: float
    stopped: bool = False
    reason: str = ""
    watchdog_expired: tuple[str, ...] = field(default_factory=tuple)
