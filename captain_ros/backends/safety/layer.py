"""The safety layer: one :class:`SafeBackend` wraps any :class:`~captain_ros.backends.base.Backend`.

Every command goes through it, below the policy-facing API and the motion layer, so MuJoCo, the
kinematic fake, the PiPER over CAN and the ROS arm bridge share one implementation of:

- joint position, velocity and acceleration limits (each tick's targets are limited from the last
  applied targets; :attr:`TickReport.q_applied` is what was really sent);
- the workspace box (the tool point of each commanded configuration, spec box + margin);
- force and current limits (measured contact force, joint effort from motor currents);
- the latched e-stop (:class:`EStopLatch`): operator (topic/service call :meth:`estop`), the
  hardware's own stop (read from :class:`LinkStatus`) and the guards trip it; only
  :meth:`reset_estop` releases it, and it survives :meth:`restore` (scene loads) and new goals;
- a command watchdog (:class:`CommandWatchdog`): the arm is told to hold when the harness stops
  sending while it moves;
- link checks on hardware: refuse to move with stale feedback or disabled motors, and refuse to
  :meth:`enable` while the twin and the measured joints disagree.

A limit exceeded before anything moves raises :class:`SafetyLimitError` (nothing moved); one hit
while a move is under way latches the e-stop and raises :class:`EStopError` (the arm holds).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.backends.base import Backend, Kinematics
from captain_ros.backends.safety.config import SIM_DEFAULTS, SafetyConfig
from captain_ros.backends.safety.guards import limit_step, outside_box
from captain_ros.backends.safety.latch import EStopLatch
from captain_ros.backends.safety.link import HardwareLink, LinkStatus
from captain_ros.backends.safety.link_checks import (
    command_problem,
    enable_refusal,
    faults_text,
    fresh_link_status,
)
from captain_ros.backends.safety.watchdog import CommandWatchdog
from captain_ros.core.errors import EStopError, HardwareError, SafetyLimitError
from captain_ros.core.geometry import Pose, as_vector
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.types import (
    CameraFrame,
    ForceGuard,
    GripperState,
    JointState,
    RobotSpec,
    TickReport,
)

log = logging.getLogger(__name__)
MOVING_RAD = 1e-4
"""A tick whose targets differ from the reference by more than this [rad] is motion under way."""


class SafeBackend(Backend):
    """Guards below the API around ``inner`` (see the module docstring)."""

    def __init__(self, inner: Backend, config: SafetyConfig = SIM_DEFAULTS) -> None:
        self.inner = inner
        self.config = config
        self.latch = EStopLatch()
        self._lock = threading.RLock()
        self._ref: dict[str, np.ndarray | None] = dict.fromkeys(inner.spec.arm_names)
        self._vel: dict[str, np.ndarray] = {
            a: np.zeros(len(inner.spec.arm(a).joint_names)) for a in inner.spec.arm_names
        }
        self._moving = False
        self.last_clipped: dict[str, tuple[str, ...]] = {}
        self.link: HardwareLink | None = inner if isinstance(inner, HardwareLink) else None
        self.watchdog = (
            CommandWatchdog(config.watchdog_s, self._on_watchdog)
            if config.watchdog_s > 0 and self.link is not None
            else None
        )

    def __getattr__(self, name: str) -> Any:  # backend-specific extras (e.g. MuJoCo's `step`)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # --- description / sensing (pass-through) --------------------------------------------------
    @property
    def spec(self) -> RobotSpec:
        return self.inner.spec

    def kinematics(self, arm: str) -> Kinematics:
        return self.inner.kinematics(arm)

    def time_s(self) -> float:
        return self.inner.time_s()

    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        return self.inner.capture(cameras)

    def joint_state(self, arm: str) -> JointState:
        return self.inner.joint_state(arm)

    def ee_pose(self, arm: str) -> Pose:
        return self.inner.ee_pose(arm)

    def gripper(self, arm: str) -> GripperState:
        return self.inner.gripper(arm)

    def contact_force_n(self, arm: str) -> float:
        return self.inner.contact_force_n(arm)

    # --- link checks ----------------------------------------------------------------------------
    def link_status(self, arm: str) -> LinkStatus | None:
        return None if self.link is None else self.link.link_status(arm)

    def _check_link(self, arms: Sequence[str]) -> None:
        """Refuse (or, mid-move, latch) on a hardware stop, stale feedback or disabled motors."""
        if self.link is None:
            return
        for arm in arms:
            st = self.link.link_status(arm)
            if st.hardware_estop:
                self._trip("hardware", f"{arm}: controller reports {st.hardware_estop}")
            problem = command_problem(arm, st, self.config)
            if problem:
                if self._moving:
                    self._trip("guard:link", problem)
                raise HardwareError(problem + "; nothing was commanded")

    def enable(self, arms: Sequence[str] | None = None) -> None:
        """Enable the motors, after checking the link, the twin and the joint measurements
        (waiting up to :data:`~captain_ros.backends.safety.link_checks.ENABLE_FEEDBACK_WAIT_S`
        for stale feedback to turn fresh)."""
        if self.link is None:
            return
        for arm in arms or self.spec.arm_names:
            st = fresh_link_status(self.link, arm, self.config.max_feedback_age_s)
            refusal = enable_refusal(arm, st, self.config)
            if refusal is not None:
                raise refusal
            self.link.enable(arm)

    # --- commanding -----------------------------------------------------------------------------
    def _trip(self, source: str, reason: str) -> None:
        if not self.latch.tripped:  # the operator's log: one line per latch, with its cause
            log.warning("e-stop latched by %s: %s", source, reason)
        event = self.latch.trip(source, reason)
        self._halt(event.reason)
        raise EStopError(self.latch.message())

    def _halt(self, reason: str) -> None:
        self._moving = False
        if self.watchdog is not None:
            self.watchdog.disarm()
        try:
            self.inner.estop(reason)
        finally:
            self._forget_reference()

    def _forget_reference(self) -> None:
        for a in self._ref:
            self._ref[a] = None
            self._vel[a][:] = 0.0

    def _limited(
        self, q_targets: Mapping[str, np.ndarray], dt: float
    ) -> tuple[dict[str, np.ndarray], bool]:
        """Limited targets per arm and whether they move any arm (vs the reference)."""
        spec, cfg = self.spec, self.config
        out: dict[str, np.ndarray] = {}
        moving = False
        lo_box, hi_box = np.asarray(spec.workspace_min_m), np.asarray(spec.workspace_max_m)
        for arm, q in q_targets.items():
            a = spec.arm(arm)
            q = as_vector(q, len(a.joint_names), f"q_targets[{arm}]")
            if not np.all(np.isfinite(q)):
                raise SafetyLimitError(f"{arm}: joint targets must be finite")
            ref = self._ref[arm]
            if ref is None:
                ref = np.asarray(self.inner.joint_state(arm).position_rad, dtype=float)
            lim = limit_step(
                q,
                ref,
                self._vel[arm],
                dt,
                a.lower_rad,
                a.upper_rad,
                a.max_velocity_rad_s * cfg.velocity_scale,
                cfg.max_accel_rad_s2,
            )
            tool = self.inner.kinematics(arm).fk(lim.q_rad).position_m
            if outside_box(tool, lo_box, hi_box, cfg.workspace_margin_m):
                msg = (
                    f"{arm}: commanded tool point {np.round(tool, 3).tolist()} leaves the "
                    f"workspace box {lo_box.tolist()}..{hi_box.tolist()} (+{cfg.workspace_margin_m} m)"
                )
                if self._moving:
                    self._trip("guard:workspace", msg)
                raise SafetyLimitError(msg + "; nothing moved")
            self.last_clipped[arm] = lim.clipped
            out[arm] = lim.q_rad
            moving = moving or float(np.max(np.abs(lim.q_rad - ref))) > MOVING_RAD
        return out, moving

    def servo(
        self, q_targets: Mapping[str, np.ndarray], duration_s: float, guard: ForceGuard
    ) -> TickReport:
        with self._lock:
            if self.latch.tripped:
                raise EStopError(self.latch.message() + "; reset it before moving")
            arms = list(q_targets) or list(self.spec.arm_names)
            self._check_link(arms)
            if duration_s > 0:
                cmd, moving = self._limited(q_targets, duration_s)
            else:  # the backend rejects it with its own message
                cmd, moving = dict(q_targets), False
            try:
                rep = self.inner.servo(cmd, duration_s, guard)
            except EStopError as exc:  # the backend's own stop (hardware e-stop, inner latch)
                if not self.latch.tripped:
                    log.warning("e-stop latched by hardware: %s", exc)
                self.latch.trip("hardware", str(exc))
                self._forget_reference()
                raise
            self._after_tick(rep, cmd, duration_s, moving)
            return rep

    def _after_tick(
        self, rep: TickReport, cmd: Mapping[str, np.ndarray], dt: float, moving: bool
    ) -> None:
        for arm, q in rep.q_applied.items():
            prev = self._ref[arm]
            self._vel[arm] = np.zeros_like(q) if prev is None or rep.stopped else (q - prev) / dt
            self._ref[arm] = None if rep.stopped else np.asarray(q, dtype=float).copy()
        self._moving = moving and not rep.stopped
        if self.watchdog is not None:
            if self._moving:
                self.watchdog.arm()
            else:
                self.watchdog.disarm()
        cfg = self.config
        for arm in cmd or self.spec.arm_names:
            force = max(rep.peak_force_n, self.inner.contact_force_n(arm))
            if force > cfg.max_contact_force_n:
                self._trip(
                    "guard:force",
                    f"{arm}: contact force {force:.1f} N over the "
                    f"{cfg.max_contact_force_n:.0f} N limit",
                )
            if np.isfinite(cfg.max_effort_nm):
                effort = np.abs(np.asarray(self.inner.joint_state(arm).effort_nm, dtype=float))
                if effort.size and float(effort.max()) > cfg.max_effort_nm:
                    j = int(effort.argmax())
                    faults = (
                        faults_text(self.link.link_status(arm)) if self.link is not None else ""
                    )
                    self._trip(
                        "guard:current",
                        f"{arm}: joint {j + 1} effort {effort[j]:.2f} N m "
                        f"over the {cfg.max_effort_nm:.1f} N m limit (motor current)"
                        + (f"; the controller reports{faults}" if faults else ""),
                    )

    def command_gripper(self, arm: str, opening_m: float) -> float:
        with self._lock:
            if self.latch.tripped:
                raise EStopError(self.latch.message() + "; reset it before moving")
            self._check_link([arm])
            return self.inner.command_gripper(arm, opening_m)

    def _on_watchdog(self) -> None:
        """No command for ``watchdog_s`` while moving: hold the measured position (no latch)."""
        with self._lock:
            if self._moving and self.link is not None:
                self.link.hold()
                self._moving = False
                self._forget_reference()

    # --- safety ---------------------------------------------------------------------------------
    def estop(self, reason: str = "") -> None:
        """Operator stop (topic or service): latch and halt now. Does not wait for a tick."""
        event = self.latch.trip("operator", reason or "operator")
        self._moving = False
        if self.watchdog is not None:
            self.watchdog.disarm()
        self.inner.estop(event.reason)
        self._forget_reference()

    def reset_estop(self) -> None:
        """The explicit reset: release the latch and the backend's stop."""
        with self._lock:
            self.latch.reset()
            self.inner.reset_estop()
            self._forget_reference()

    @property
    def estopped(self) -> bool:
        if not self.latch.tripped and self.inner.estopped:
            self.latch.trip("hardware", "the backend reports a latched stop")
        return self.latch.tripped

    # --- simulation only / lifecycle ------------------------------------------------------------
    def snapshot(self) -> Any:
        return self.inner.snapshot()

    def restore(self, snapshot: Any) -> None:
        """Restore the simulator; a latched e-stop stays latched (scene loads do not clear it)."""
        with self._lock:
            self.inner.restore(snapshot)
            self._forget_reference()
            if self.latch.tripped and not self.inner.estopped:
                self.inner.estop(self.latch.message())

    def guard_state(self) -> dict[str, Any]:
        """The layer's memory of the last applied targets and joint velocities (the next tick's
        rate limits start from them), for a decision-point snapshot of the whole episode."""
        with self._lock:
            return {
                "ref": {a: None if q is None else q.copy() for a, q in self._ref.items()},
                "vel": {a: v.copy() for a, v in self._vel.items()},
                "moving": self._moving,
                "last_clipped": dict(self.last_clipped),
            }

    def restore_guard_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`guard_state` after :meth:`restore` (the latch is never touched here)."""
        with self._lock:
            self._ref = {
                a: None if q is None else np.array(q, dtype=float) for a, q in state["ref"].items()
            }
            self._vel = {a: np.array(v, dtype=float) for a, v in state["vel"].items()}
            self._moving = bool(state["moving"])
            self.last_clipped = dict(state["last_clipped"])

    def privileged_state(self) -> PrivilegedState:
        return self.inner.privileged_state()

    def close(self) -> None:
        if self.watchdog is not None:
            self.watchdog.close()
        self.inner.close()
