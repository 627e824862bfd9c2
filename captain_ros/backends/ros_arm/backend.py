"""Any ros2_control arm (the XR1 arm of the CaPtain paper, ...) as a
:class:`~captain_ros.backends.base.Backend`, over an :class:`~.transport.ArmTransport`.

Control: joint streaming over ``FollowJointTrajectory``. The motion layer plans with the kinematic
twin (:class:`~.twin.ModelTwin`, the user's URDF/MJCF) and each control tick sends one goal: the
tick's joint target at ``time_from_start = duration_s``. A new goal preempts the previous one, as
``joint_trajectory_controller`` does, so the arm follows the stream and stops at the last target
when the stream stops. During a tick the backend polls ``/joint_states`` every 5 ms and estimates
the external force at the tool from the efforts (minus the twin's gravity torque, through the
twin's Jacobian); at the first sample over the guard it cancels the goal (the controller holds)
and the tick reports ``stopped``. A joint lagging its still target beyond the tracking threshold
is contact too. The gripper is a ``GripperCommand`` goal (or a position topic). ``estop`` cancels
every goal and latches; a real arm also needs its own hardware e-stop (docs/hardware.md).

Link health for the safety layer (:class:`~captain_ros.backends.safety.LinkStatus`): connected =
joint states have arrived; feedback age = age of the newest joint state; enabled = the trajectory
server is available (ros2_control has no motor-enable topic); faults name what is missing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.backends.base import Kinematics
from captain_ros.backends.cameras.frames import (
    Intrinsics,
    RawRGBD,
    encode_depth,
    load_extrinsics,
    to_camera_frame,
)
from captain_ros.backends.hardware import HardwareBackend
from captain_ros.backends.ros_arm.config import RosArmConfig
from captain_ros.backends.ros_arm.transport import ArmTransport, JointSample
from captain_ros.backends.ros_arm.twin import ModelTwin
from captain_ros.backends.safety.link import LinkStatus
from captain_ros.core.errors import EStopError, HardwareError, NotSupportedError, UnknownNameError
from captain_ros.core.geometry import Pose
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.types import CameraFrame, GripperState, JointState, RobotSpec

log = logging.getLogger(__name__)
STREAMING_GAP_S = 0.2
"""A goal sent within this long after the previous one continues a motion under way [s]."""
LIMIT_TOLERANCE_RAD = 0.02
"""Measured joints may lie this far outside the limits before enabling is refused [rad]."""


class RosArmBackend(HardwareBackend):
    """A ROS 2 arm rig.

    Args:
        config: The rig's configuration.
        transport: The ROS side (:class:`~captain_ros.ros.arm_bridge.RclpyArmTransport`).
    """

    config: RosArmConfig
    twin: ModelTwin

    def __init__(self, config: RosArmConfig, transport: ArmTransport) -> None:
        self.config = config
        self.transport = transport
        self.twin = ModelTwin(config)
        self._spec: RobotSpec = self.twin.spec
        self._extrinsics = {
            name: load_extrinsics(
                c.calibration, "world_from_optical" if c.mount == "world" else "flange_from_optical"
            )
            for name, c in config.cameras.items()
        }
        self._start()
        self._sent_s: dict[str, float] = {}
        first = transport.wait_joint_sample(-1.0, config.feedback_timeout_s)
        if first is None:
            raise HardwareError(
                f"no {config.joint_states_topic} within "
                f"{config.feedback_timeout_s:.1f} s: is the arm driver running on "
                "this ROS domain (ROS_DOMAIN_ID)?"
            )
        for arm in self._spec.arm_names:
            self._missing(arm, first)
            self._update_twin(arm, first)
            self._grip_cmd[arm] = self._opening(arm, first)

    # --- description ----------------------------------------------------------------------------
    def _arm(self, arm: str) -> Any:
        if arm not in self.config.arms:
            raise UnknownNameError("arm", arm, list(self.config.arms))
        return self.config.arms[arm]

    def _missing(self, arm: str, s: JointSample) -> None:
        a = self._arm(arm)
        missing = [j for j in (*a.joints, *a.gripper.joints) if j not in s.position]
        if missing:
            raise HardwareError(
                f"{arm}: {self.config.joint_states_topic} lacks joint(s) "
                f"{', '.join(missing)} (has {', '.join(sorted(s.position))}); "
                "check the joint names in the config"
            )

    def _sample(self) -> JointSample:
        s = self.transport.joint_sample()
        if s is None:
            raise HardwareError(f"no {self.config.joint_states_topic} received")
        return s

    def _opening(self, arm: str, s: JointSample) -> float:
        g = self._arm(arm).gripper
        return float(s.vector("position", g.joints).sum() * g.opening_scale)

    def _update_twin(self, arm: str, s: JointSample) -> np.ndarray:
        q = s.vector("position", self._arm(arm).joints)
        self.twin.update(arm, q, self._opening(arm, s))
        return q

    def _fresh(self) -> JointSample:
        s = self._sample()
        for arm in self._spec.arm_names:
            self._update_twin(arm, s)
        return s

    def kinematics(self, arm: str) -> Kinematics:
        self._arm(arm)
        self._fresh()
        return self.twin.kin[arm]

    # --- sensing --------------------------------------------------------------------------------
    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        names = list(self.config.cameras if cameras is None else cameras)
        for c in names:
            if c not in self.config.cameras:
                raise UnknownNameError("camera", c, list(self.config.cameras))
        asked = time.monotonic()
        self._fresh()
        out = {}
        for c in names:
            cam = self.config.cameras[c]
            img = self.transport.wait_image(c, asked, self.config.camera_timeout_s)
            if img is None:
                raise HardwareError(
                    f"camera {c}: no new frame on {cam.image_topic} + "
                    f"{cam.depth_topic} + {cam.info_topic} within "
                    f"{self.config.camera_timeout_s:.1f} s"
                )
            if img.encoding == "16UC1":
                depth, scale = np.asarray(img.depth, dtype=np.uint16), cam.depth_scale_m
            else:
                depth, scale = encode_depth(img.depth, 0.001), 0.001
            h, w = img.color.shape[:2]
            raw = RawRGBD(
                img.color, depth, scale, Intrinsics.from_matrix(img.k, w, h), self.time_s()
            )
            ext = self._extrinsics[c]
            pose = ext if cam.mount == "world" else self.twin.flange_matrix(cam.mount) @ ext
            out[c] = to_camera_frame(c, raw, pose)
        return out

    def joint_state(self, arm: str) -> JointState:
        a = self._arm(arm)
        s = self._sample()
        return JointState(
            a.joints,
            s.vector("position", a.joints),
            s.vector("velocity", a.joints),
            s.vector("effort", a.joints),
            self.time_s(),
        )

    def ee_pose(self, arm: str) -> Pose:
        self._arm(arm)
        self._update_twin(arm, self._sample())
        return Pose.from_matrix(self.twin.tcp_matrix(arm))

    def gripper(self, arm: str) -> GripperState:
        g = self._arm(arm).gripper
        s = self._sample()
        opening = self._opening(arm, s)
        effort = float(np.abs(s.vector("effort", g.joints)).sum())
        return self._grip_state(arm, opening, effort, effort, g.holding_effort)

    def contact_force_n(self, arm: str) -> float:
        a = self._arm(arm)
        s = self._sample()
        return self._filter_force(arm, s.vector("position", a.joints), s.vector("effort", a.joints))

    # --- link (read by the safety layer) --------------------------------------------------------
    def link_status(self, arm: str) -> LinkStatus:
        a = self._arm(arm)
        s = self.transport.joint_sample()
        server = self.transport.server_ready(arm)
        age = float("inf") if s is None else max(0.0, time.monotonic() - s.received_s)
        faults = []
        if not server:
            faults.append(
                f"action server {a.trajectory_action} is not available (driver down or "
                "its controller inactive)"
            )
        goal = self.transport.goal_state(arm)
        if goal.status == "aborted" and goal.error:
            faults.append(f"last trajectory aborted by the driver: {goal.error}")
        return LinkStatus(
            connected=s is not None, enabled=server, feedback_age_s=age, faults=tuple(faults)
        )

    def enable(self, arm: str) -> None:
        """Check the driver before any motion: the trajectory server answers, ``/joint_states``
        carries every configured joint and the measured joints lie within the limits."""
        a = self._arm(arm)
        if not self.transport.server_ready(arm, self.config.server_timeout_s):
            raise HardwareError(
                f"{arm}: FollowJointTrajectory server {a.trajectory_action} not "
                f"available within {self.config.server_timeout_s:.1f} s (driver "
                "down, or the controller is not active); nothing was commanded"
            )
        s = self._sample()
        self._missing(arm, s)
        spec = self._spec.arm(arm)
        q = s.vector("position", a.joints)
        bad = [
            f"{j} = {v:.3f} rad outside [{lo:.3f}, {hi:.3f}]"
            for j, v, lo, hi in zip(a.joints, q, spec.lower_rad, spec.upper_rad, strict=True)
            if v < lo - LIMIT_TOLERANCE_RAD or v > hi + LIMIT_TOLERANCE_RAD
        ]
        if bad:
            raise HardwareError(
                f"{arm}: measured joints exceed the configured limits ("
                f"{'; '.join(bad)}): wrong model, joint order or zero offsets; "
                "refusing to enable"
            )

    def disable(self, arm: str) -> None:
        self.transport.cancel(arm)

    def hold(self) -> None:
        for arm in self._spec.arm_names:
            self.transport.cancel(arm)
            self._last_target.pop(arm, None)
            self._sent_s.pop(arm, None)

    # --- commanding (the tick loop: HardwareBackend.servo) --------------------------------------
    def _send_targets(self, cmd: Mapping[str, np.ndarray], duration_s: float) -> None:
        t_start = time.monotonic()
        for arm, q in cmd.items():  # streaming if the previous goal went out just before
            streaming = t_start - self._sent_s.get(arm, -1e9) < STREAMING_GAP_S
            self._send(arm, q, duration_s, moving=streaming)
            self._sent_s[arm] = time.monotonic()

    def _measure(self, arms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        s = self._fresh()
        return {
            arm: (
                s.vector("position", self._arm(arm).joints),
                s.vector("effort", self._arm(arm).joints),
            )
            for arm in arms
        }

    def _check_driver(self, arm: str) -> None:
        goal = self.transport.goal_state(arm)
        if goal.status == "aborted":
            self.estop(f"{arm}: the driver aborted the trajectory ({goal.error})")
            raise EStopError(f"e-stop latched: {self._estop_reason}")

    def _send(self, arm: str, q: np.ndarray, duration_s: float, moving: bool) -> None:
        a = self._arm(arm)
        goal = self.transport.send_trajectory(
            arm, a.joints, [(q, duration_s)], self.config.goal_timeout_s
        )
        if goal.status in ("accepted", "succeeded"):
            return
        why = goal.error or f"no answer within {self.config.goal_timeout_s:.2f} s"
        msg = f"{arm}: {a.trajectory_action} did not accept the trajectory ({why})"
        if moving:  # the arm was following the stream: stop it and latch
            self.estop(msg)
            raise EStopError(f"e-stop latched: {msg}")
        raise HardwareError(msg + "; nothing moved")

    def _send_gripper(self, arm: str, opening_m: float) -> None:
        g = self._arm(arm).gripper
        self.transport.send_gripper(arm, opening_m, g.max_effort_n)

    # --- safety ---------------------------------------------------------------------------------
    def estop(self, reason: str = "") -> None:
        """Cancel every trajectory goal (the controllers hold) and latch."""
        self._estop_reason = reason or "operator"
        log.warning("ros_arm e-stop: %s", self._estop_reason)
        self.hold()

    def reset_estop(self) -> None:
        """Release the latch; the arm holds where it is (the next goal starts from there)."""
        self.hold()
        self._estop_reason = ""

    def privileged_state(self) -> PrivilegedState:
        if not self.config.ground_truth_service:
            raise NotSupportedError("RosArmBackend has no privileged state (hardware)")
        return PrivilegedState.from_dict(self.transport.ground_truth())

    def close(self) -> None:
        self.transport.close()


__all__ = ["RosArmBackend"]
