"""What the hardware backends (PiPER over CAN, any ROS 2 arm) share: one guarded control tick.

A hardware backend streams joint targets, one per control tick, and polls its feedback every
:data:`POLL_S` during the tick. :class:`HardwareBackend` holds the loop both rigs run: targets
clipped to the joint limits, the tool force estimated from the joint efforts minus the twin's
gravity torque (through the twin's Jacobian, less the configured noise floor, low-pass filtered),
a still target that the arm lags by more than the tracking threshold counted as contact, and at
the first sample over the guard the arm told to :meth:`hold`. The subclass says how a tick's
targets are sent and how the joints are measured; the safety layer's limits come from its
configuration's ``safety`` section (:func:`captain_ros.backends.registry.guard`).
"""

from __future__ import annotations

import abc
import time
from collections.abc import Mapping
from typing import Protocol

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.backends.rig_config import ContactConfig
from captain_ros.backends.safety.config import SafetyConfig
from captain_ros.backends.safety.link import LinkStatus
from captain_ros.backends.twin import MujocoTwin
from captain_ros.core.errors import EStopError, InvalidArgumentError
from captain_ros.core.geometry import as_vector
from captain_ros.core.types import ForceGuard, GripperState, RobotSpec, TickReport

POLL_S = 0.005
"""Feedback polling period inside a control tick [s] (the PiPER streams at 200 Hz)."""


class RigConfig(Protocol):
    """The parts of a rig configuration this module reads."""

    @property
    def contact(self) -> ContactConfig: ...

    @property
    def safety(self) -> SafetyConfig: ...


class HardwareBackend(Backend):
    """Base of the hardware backends (see the module docstring). The subclass sets ``config``,
    ``twin`` and ``_spec`` and calls :meth:`_start` before it talks to the rig."""

    config: RigConfig
    twin: MujocoTwin
    _spec: RobotSpec

    def _start(self) -> None:
        self._t0 = time.monotonic()
        self._estop_reason = ""
        self._grip_cmd: dict[str, float] = {}
        self._force: dict[str, float] = dict.fromkeys(self._spec.arm_names, 0.0)
        self._last_target: dict[str, np.ndarray] = {}

    # --- what the subclass provides ---------------------------------------------------------------
    @abc.abstractmethod
    def _send_targets(self, cmd: Mapping[str, np.ndarray], duration_s: float) -> None:
        """Send one tick's clipped joint targets."""

    @abc.abstractmethod
    def _measure(self, arms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Fresh ``(joint positions [rad], joint efforts [N m])`` of ``arms`` (the twin updated)."""

    def _check_driver(self, arm: str) -> None:  # noqa: B027 - optional hook
        """Inside a tick, after ``arm``'s sample: latch and raise on a driver-side failure."""

    @abc.abstractmethod
    def _send_gripper(self, arm: str, opening_m: float) -> None:
        """Send a clipped jaw opening target [m]."""

    @abc.abstractmethod
    def hold(self) -> None:
        """Stop every arm where it is (the safety layer and the watchdog call it too); what it
        leaves in ``_last_target`` (the held position, or nothing) is the tick's ``q_applied``."""

    @abc.abstractmethod
    def link_status(self, arm: str) -> LinkStatus:
        """Health of ``arm``'s link (read by the safety layer)."""

    # --- shared ------------------------------------------------------------------------------------
    @property
    def spec(self) -> RobotSpec:
        return self._spec

    def time_s(self) -> float:
        return time.monotonic() - self._t0

    @property
    def estopped(self) -> bool:
        return bool(self._estop_reason)

    def _refuse_if_latched(self) -> None:
        if self._estop_reason:
            raise EStopError(f"e-stop latched ({self._estop_reason}); reset it before moving")

    def _filter_force(self, arm: str, q_rad: np.ndarray, effort_nm: np.ndarray) -> float:
        """The filtered tool-force estimate of ``arm`` after one sample [N]."""
        tau_ext = effort_nm - self.twin.gravity_torque_nm(arm, q_rad)
        f = float(np.linalg.norm(self.twin.tool_force_n(arm, q_rad, tau_ext)))
        f = max(0.0, f - self.config.contact.force_noise_n)
        k = self.config.contact.filter_alpha
        self._force[arm] = k * f + (1 - k) * self._force[arm]
        return self._force[arm]

    def _grip_state(
        self, arm: str, opening_m: float, effort: float, force_n: float, holding_effort: float
    ) -> GripperState:
        cmd = self._grip_cmd.get(arm, opening_m)
        holding = effort > holding_effort and opening_m > 0.002 and cmd < opening_m - 0.001
        return GripperState(opening_m, cmd, force_n, holding, self.time_s())

    def servo(
        self, q_targets: Mapping[str, np.ndarray], duration_s: float, guard: ForceGuard
    ) -> TickReport:
        self._refuse_if_latched()
        if not (np.isfinite(duration_s) and duration_s > 0):
            raise InvalidArgumentError(f"duration_s must be positive, got {duration_s!r}")
        cmd: dict[str, np.ndarray] = {}
        for arm, q in q_targets.items():
            a = self._spec.arm(arm)
            cmd[arm] = np.clip(
                as_vector(q, len(a.joint_names), f"q_targets[{arm}]"), a.lower_rad, a.upper_rad
            )
        t_start = time.monotonic()
        prev = {a: self._last_target.get(a) for a in cmd}
        self._send_targets(cmd, duration_s)
        self._last_target.update({a: q.copy() for a, q in cmd.items()})
        watched = list(cmd) or list(self._spec.arm_names)
        peak, stopped, emergency, polls = 0.0, False, False, 0
        stop_at = guard.baseline_n + guard.stop_force_n
        while True:
            time.sleep(max(0.0, min(POLL_S, t_start + duration_s - time.monotonic())))
            polls += 1
            if self._estop_reason:
                raise EStopError(f"e-stop latched ({self._estop_reason}) during the tick")
            for arm, (q, effort) in self._measure(watched).items():
                f = self._filter_force(arm, q, effort)
                peak = max(peak, f)
                last = prev.get(arm)
                lag = 0.0
                if arm in cmd and last is not None and np.allclose(last, cmd[arm]):
                    lag = float(np.max(np.abs(cmd[arm] - q)))
                if f > guard.emergency_force_n:
                    stopped = emergency = True
                elif f > stop_at or lag > self.config.contact.tracking_error_rad:
                    stopped = True
                self._check_driver(arm)
            if stopped:
                self.hold()
                break
            if time.monotonic() - t_start >= duration_s:
                break
        return TickReport(
            elapsed_s=time.monotonic() - t_start,
            substeps=polls,
            peak_force_n=peak,
            stopped=stopped,
            emergency=emergency,
            q_applied={a: self._last_target.get(a, q).copy() for a, q in cmd.items()},
        )

    def command_gripper(self, arm: str, opening_m: float) -> float:
        self._refuse_if_latched()
        v = float(as_vector(opening_m, 1, "opening_m")[0])
        v = float(np.clip(v, 0.0, self._spec.arm(arm).jaw_max_opening_m))
        self._send_gripper(arm, v)
        self._grip_cmd[arm] = v
        return v


__all__ = ["POLL_S", "HardwareBackend", "RigConfig"]
