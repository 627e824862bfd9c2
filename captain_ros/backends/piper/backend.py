"""The PiPER rig over CAN (``piper_sdk``) as a :class:`~captain_ros.backends.base.Backend`.

Control: joint streaming. The motion layer plans with the kinematic twin (the project's own IK)
and sends one ``JointCtrl`` per 20 ms control tick (MOVE J, CAN control mode); the arm's own
planner follows within its speed rate. During a tick the backend polls the feedback every 5 ms
(the arm streams at 200 Hz) and estimates the external force at the tool from the motor currents
(effort minus the twin's gravity torque, mapped through the twin's Jacobian). At the first sample
over the guard it commands the measured position (the arm holds) and the tick reports
``stopped``; a joint that lags its still target by more than the tracking threshold is contact too.
The gripper is ``GripperCtrl`` with the configured effort. ``estop`` sends ``EmergencyStop``.
Snapshots and privileged state do not exist on hardware (``NotSupportedError``); against the
emulator, ``ground_truth`` gives the emulated world's simulator state for host success only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.backends.base import Kinematics
from captain_ros.backends.hardware import HardwareBackend
from captain_ros.backends.piper.config import PiperConfig
from captain_ros.backends.piper.link import ArmFeedback, PiperArmLink
from captain_ros.backends.piper.twin import KinematicTwin
from captain_ros.backends.piper.units import euler_zyx_to_matrix
from captain_ros.backends.safety.link import LinkStatus
from captain_ros.core.errors import HardwareError, NotSupportedError, UnknownNameError
from captain_ros.core.geometry import Pose
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.types import CameraFrame, GripperState, JointState, RobotSpec

CameraGrab = Callable[[], CameraFrame]


class PiperBackend(HardwareBackend):
    """PiPER arm(s) on CAN.

    Args:
        config: The rig's configuration.
        cameras: Camera name -> a callable returning the newest :class:`CameraFrame` (RealSense or
            emulated, see :mod:`captain_ros.backends.cameras`).
        ground_truth: Emulator only: the emulated world's simulator state (host success).
    """

    config: PiperConfig
    twin: KinematicTwin

    def __init__(
        self,
        config: PiperConfig,
        cameras: Mapping[str, CameraGrab] | None = None,
        ground_truth: Callable[[], Any] | None = None,
    ) -> None:
        self.config = config
        self.twin = KinematicTwin(config.rig)
        self._cameras = dict(cameras or {})
        spec = self.twin.spec
        self._spec = RobotSpec(
            spec.name,
            spec.arms,
            tuple(self._cameras),
            spec.head_camera,
            spec.workspace_min_m,
            spec.workspace_max_m,
        )
        self._ground_truth = ground_truth
        self._start()
        self.links: dict[str, PiperArmLink] = {}
        try:
            for arm in spec.arm_names:
                self.links[arm] = PiperArmLink(config.can[arm], config.bustype)
            for arm, link in self.links.items():
                link.wait_feedback(config.feedback_timeout_s)
                fb = link.feedback()
                self._grip_cmd[arm] = fb.gripper_m
                self.twin.update(arm, fb.q_rad, fb.gripper_m)
                link.crash_protection(config.crash_protection_level)
        except Exception:
            self.close()
            raise

    # --- description ----------------------------------------------------------------------------
    def _link(self, arm: str) -> PiperArmLink:
        if arm not in self.links:
            raise UnknownNameError("arm", arm, list(self.links))
        return self.links[arm]

    def _fb(self, arm: str) -> ArmFeedback:
        fb = self._link(arm).feedback()
        self.twin.update(arm, fb.q_rad, fb.gripper_m)
        return fb

    def kinematics(self, arm: str) -> Kinematics:
        self._fb(arm)
        for other in self.links:
            if other != arm:
                self._fb(other)
        return self.twin.kin[arm]

    # --- sensing --------------------------------------------------------------------------------
    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        names = list(self._cameras if cameras is None else cameras)
        for c in names:
            if c not in self._cameras:
                raise UnknownNameError("camera", c, list(self._cameras))
        for arm in self.links:
            self._fb(arm)
        return {c: self._cameras[c]() for c in names}

    def joint_state(self, arm: str) -> JointState:
        fb = self._fb(arm)
        return JointState(
            self._spec.arm(arm).joint_names, fb.q_rad, fb.qd_rad_s, fb.effort_nm, self.time_s()
        )

    def ee_pose(self, arm: str) -> Pose:
        self._fb(arm)
        return Pose.from_matrix(self.twin.tcp_matrix(arm))

    def gripper(self, arm: str) -> GripperState:
        fb = self._fb(arm)
        effort = abs(fb.gripper_effort_nm)
        return self._grip_state(
            arm,
            fb.gripper_m,
            effort,
            effort * self.config.gripper_n_per_nm,
            self.config.holding_effort_nm,
        )

    def contact_force_n(self, arm: str) -> float:
        fb = self._fb(arm)
        return self._filter_force(arm, fb.q_rad, fb.effort_nm)

    # --- hardware link (read by the safety layer) -----------------------------------------------
    def link_status(self, arm: str) -> LinkStatus:
        fb = self._fb(arm)
        base = self._spec.arm(arm).base_pose.matrix()
        reported = np.eye(4)
        reported[:3, :3] = euler_zyx_to_matrix(*fb.flange_rpy_rad)
        reported[:3, 3] = fb.flange_m
        twin_flange = np.linalg.inv(base) @ self.twin.flange_matrix(arm)
        twin_err = float(np.linalg.norm(twin_flange[:3, 3] - reported[:3, 3]))
        stop = fb.arm_status if fb.arm_status in ("EMERGENCY_STOP", "COLLISION_OCCURRED") else ""
        disagree = float(np.max(np.abs(fb.q_rad - fb.motor_pos_rad)))
        return LinkStatus(
            connected=np.isfinite(fb.age_s),
            enabled=all(fb.enabled) and fb.ctrl_mode == 0x01,
            feedback_age_s=fb.age_s,
            hardware_estop=stop,
            twin_error_m=twin_err,
            joint_disagreement_rad=disagree,
            faults=fb.faults,
            disabled_motors=tuple(k + 1 for k, on in enumerate(fb.enabled) if not on),
        )

    def enable(self, arm: str) -> None:
        self._link(arm).enable(self.config.enable_timeout_s, self.config.speed_rate_pct)

    def disable(self, arm: str) -> None:
        self._link(arm).disable()

    def hold(self) -> None:
        for arm, link in self.links.items():
            q = link.feedback().q_rad
            link.joint_ctrl(q)
            self._last_target[arm] = q

    # --- commanding (the tick loop: HardwareBackend.servo) --------------------------------------
    def _send_targets(self, cmd: Mapping[str, np.ndarray], duration_s: float) -> None:
        for arm, q in cmd.items():
            self._link(arm).joint_ctrl(q)

    def _measure(self, arms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        out = {}
        for arm in arms:
            fb = self._fb(arm)
            out[arm] = (fb.q_rad, fb.effort_nm)
        return out

    def _send_gripper(self, arm: str, opening_m: float) -> None:
        self._link(arm).gripper_ctrl(opening_m, self.config.gripper_effort_nm)

    # --- safety ---------------------------------------------------------------------------------
    def estop(self, reason: str = "") -> None:
        """The arm's fast stop (``EmergencyStop(0x01)``) on every arm; latched here as well."""
        self._estop_reason = reason or "operator"
        for link in self.links.values():
            link.emergency_stop()

    def reset_estop(self) -> None:
        """Resume (``EmergencyStop(0x02)``), re-enable, CAN control, hold the measured pose."""
        for link in self.links.values():
            link.resume()
        time.sleep(0.05)
        for arm, link in self.links.items():
            link.enable(self.config.enable_timeout_s, self.config.speed_rate_pct)
            self._grip_cmd[arm] = link.feedback().gripper_m
        self.hold()
        self._estop_reason = ""

    def privileged_state(self) -> PrivilegedState:
        if self._ground_truth is None:
            raise NotSupportedError("PiperBackend has no privileged state (hardware)")
        return self._ground_truth()

    def close(self) -> None:
        for link in self.links.values():
            link.close()
        self.links = {}


__all__ = ["HardwareError", "PiperBackend"]
