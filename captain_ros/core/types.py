"""Typed, validated data contracts exchanged between backends, motion and perception. SI units."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.geometry import Pose


@dataclass(frozen=True)
class ArmSpec:
    """Static description of one arm and its parallel gripper.

    Attributes:
        name: Arm name used by the API's optional ``arm`` argument (``"arm"``, ``"left"``, ``"right"``).
        joint_names: Names of the arm joints (without the gripper), base to tip.
        lower_rad / upper_rad: Joint position limits [rad].
        max_velocity_rad_s: Joint velocity limits [rad/s].
        base_pose: Pose of the arm base in the world frame.
        reach_m: Maximum distance from the shoulder to the tool point [m].
        jaw_max_opening_m: Full opening between the pads [m].
        pad_size_m: (length, width, thickness) of one finger pad [m].
        wrist_camera: Name of the wrist camera on this arm, if any.
    """

    name: str
    joint_names: tuple[str, ...]
    lower_rad: np.ndarray
    upper_rad: np.ndarray
    max_velocity_rad_s: np.ndarray
    base_pose: Pose
    reach_m: float
    jaw_max_opening_m: float
    pad_size_m: tuple[float, float, float]
    wrist_camera: str | None = None

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        for attr in ("lower_rad", "upper_rad", "max_velocity_rad_s"):
            arr = np.asarray(getattr(self, attr), dtype=float)
            if arr.shape != (n,):
                raise InvalidArgumentError(f"ArmSpec.{attr} must have shape ({n},)")
            object.__setattr__(self, attr, arr)
        if np.any(self.lower_rad >= self.upper_rad):
            raise InvalidArgumentError("ArmSpec: every lower limit must be below its upper limit")
        if self.reach_m <= 0 or self.jaw_max_opening_m <= 0:
            raise InvalidArgumentError("ArmSpec: reach and jaw opening must be positive")


@dataclass(frozen=True)
class RobotSpec:
    """A rig: one or more arms plus cameras. ``cameras`` lists every camera name."""

    name: str
    arms: tuple[ArmSpec, ...]
    cameras: tuple[str, ...]
    head_camera: str = "head"
    workspace_min_m: np.ndarray = field(default_factory=lambda: np.array([-1.0, -1.0, 0.0]))
    workspace_max_m: np.ndarray = field(default_factory=lambda: np.array([1.0, 1.0, 1.0]))

    def arm(self, name: str) -> ArmSpec:
        for a in self.arms:
            if a.name == name:
                return a
        from captain_ros.core.errors import UnknownNameError

        raise UnknownNameError("arm", name, [a.name for a in self.arms])

    @property
    def arm_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arms)


@dataclass(frozen=True)
class CameraFrame:
    """One RGB-D frame.

    Attributes:
        camera: Camera name.
        rgb: (H, W, 3) uint8.
        depth_m: (H, W) float32 metric z-depth along the optical axis [m]; 0 or NaN = no depth.
        intrinsics: (3, 3) pinhole matrix K [px].
        world_from_camera: (4, 4) pose of the *optical* frame (x right, y down, z forward, REP 103
            ``*_optical_frame``) in the world frame.
        stamp_s: Acquisition time [s] on the backend clock.
        segmentation: Optional (H, W) int32 object-id image (simulation ground truth; never given to
            policy code, used by benchmarks only).
    """

    camera: str
    rgb: np.ndarray
    depth_m: np.ndarray
    intrinsics: np.ndarray
    world_from_camera: np.ndarray
    stamp_s: float
    segmentation: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.rgb.ndim != 3 or self.rgb.shape[2] != 3 or self.rgb.dtype != np.uint8:
            raise InvalidArgumentError("CameraFrame.rgb must be (H, W, 3) uint8")
        if self.depth_m.shape != self.rgb.shape[:2]:
            raise InvalidArgumentError("CameraFrame.depth_m must be (H, W) like rgb")
        if np.asarray(self.intrinsics).shape != (3, 3):
            raise InvalidArgumentError("CameraFrame.intrinsics must be 3x3")
        if np.asarray(self.world_from_camera).shape != (4, 4):
            raise InvalidArgumentError("CameraFrame.world_from_camera must be 4x4")

    @property
    def height(self) -> int:
        return int(self.rgb.shape[0])

    @property
    def width(self) -> int:
        return int(self.rgb.shape[1])


@dataclass(frozen=True)
class JointState:
    """Joint state of one arm: names, positions [rad], velocities [rad/s], efforts [N m]."""

    names: tuple[str, ...]
    position_rad: np.ndarray
    velocity_rad_s: np.ndarray
    effort_nm: np.ndarray
    stamp_s: float


@dataclass(frozen=True)
class GripperState:
    """Parallel gripper: opening between pads [m], commanded opening [m], grip force [N]."""

    opening_m: float
    command_m: float
    force_n: float
    holding: bool
    stamp_s: float


@dataclass(frozen=True)
class ForceGuard:
    """Force monitoring for one control tick.

    Attributes:
        stop_force_n: Stop at the first physics substep whose contact force on the arm exceeds
            ``baseline_n + stop_force_n`` [N]. ``inf`` disables the guarded stop.
        emergency_force_n: Always-on absolute limit [N]; exceeding it stops and flags ``emergency``.
        baseline_n: Force already present when the move started (so a move that starts in
            contact, e.g. ``recover``, is not stopped at once) [N].
    """

    stop_force_n: float = 5.0
    emergency_force_n: float = 60.0
    baseline_n: float = 0.0

    def __post_init__(self) -> None:
        if not (self.stop_force_n > 0 and self.emergency_force_n > 0 and self.baseline_n >= 0):
            raise InvalidArgumentError("ForceGuard thresholds must be positive")


@dataclass(frozen=True)
class TickReport:
    """What one control tick actually did.

    Attributes:
        elapsed_s: Simulated/real time that passed [s].
        substeps: Physics substeps (or driver cycles) executed.
        peak_force_n: Largest contact force on the arm(s) seen in any substep [N].
        stopped: The guard tripped (guarded stop or emergency); motion was halted at that substep.
        emergency: The emergency force limit or the e-stop tripped.
        q_applied: Joint targets actually sent per arm after safety clipping [rad].
    """

    elapsed_s: float
    substeps: int
    peak_force_n: float
    stopped: bool
    emergency: bool
    q_applied: dict[str, np.ndarray] = field(default_factory=dict)
