"""The controller of one emulated PiPER arm: the state machine the CAN commands drive.

Power-on: motors disabled, standby mode. ``0x471`` enables/disables motors (7 = all); ``0x151``
selects CAN control and MOVE J with a speed rate [%]; ``0x155-0x157`` set joint targets, which the
controller's own planner follows within the joint velocity limits (x speed rate) and acceleration
limits; targets outside the joint limits are refused (arm status 0x04). ``0x150`` 0x01 is the fast
stop (the arm holds, status EMERGENCY_STOP); 0x02 resumes into standby (the host re-sends 0x151).
Crash protection (``0x47A``, levels 1-8) stops the arm with status COLLISION when a joint's
external torque exceeds :data:`CRASH_THRESHOLD_NM` of its level. Injected faults: a disabled
motor (stops following, enable bit cleared), an over-current (driver bit set, current reported
high).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from captain_ros.backends.piper.units import mdeg_to_rad
from captain_ros.backends.piper_emulator import frames

CRASH_THRESHOLD_NM = (math.inf, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0)
"""External joint torque [N m] that trips crash protection at levels 0 (off) to 8 (emulator model,
not a vendor figure)."""
OVER_CURRENT_MA = 9000
"""Motor current [0.001 A] reported by an injected over-current fault."""
GRIPPER_N_PER_NM = 4.0
"""Emulated finger force [N] per N m of gripper effort (3 N m -> 12 N, the simulator's grip)."""


@dataclass
class ArmDevice:
    """State of one arm's controller. Joint arrays are J1..J6 [rad]."""

    lower_rad: np.ndarray
    upper_rad: np.ndarray
    max_velocity_rad_s: np.ndarray
    max_accel_rad_s2: np.ndarray
    enabled: np.ndarray = field(default_factory=lambda: np.zeros(6, dtype=bool))
    ctrl_mode: int = 0x00
    move_mode: int = 0x01
    speed_rate: int = 0
    arm_status: int = frames.ARM_NORMAL
    err_code: int = 0
    target_rad: np.ndarray | None = None
    setpoint_rad: np.ndarray | None = None
    velocity_rad_s: np.ndarray = field(default_factory=lambda: np.zeros(6))
    crash_levels: list[int] = field(default_factory=lambda: [0] * 6)
    grip_target_m: float | None = None
    grip_effort_nm: float = 0.0
    grip_enabled: bool = False
    faulty_motors: set[int] = field(default_factory=set)
    over_current: set[int] = field(default_factory=set)
    collided: set[int] = field(default_factory=set)
    replies: list[tuple[int, bytes]] = field(default_factory=list)

    # --- commands ------------------------------------------------------------------------------
    def handle(self, cmd: frames.Command, q_meas: np.ndarray) -> None:
        f = cmd.fields
        if cmd.kind == "motor_enable":
            motors = range(6) if f["motor"] in (7, 0xFF) else [f["motor"] - 1]
            for j in motors:
                if 0 <= j < 6:
                    self.enabled[j] = f["flag"] == 0x02 and j not in self.faulty_motors
            if not self.enabled.all():
                self._hold(q_meas)
        elif cmd.kind == "motion_ctrl_1":
            if f["emergency_stop"] == 0x01:
                self.arm_status = frames.ARM_EMERGENCY_STOP
                self._hold(q_meas)
            elif f["emergency_stop"] == 0x02:  # resume: clear stops and errors, back to standby
                self.arm_status = frames.ARM_NORMAL
                self.err_code = 0
                self.ctrl_mode = 0x00
                self.collided.clear()
                self._hold(q_meas)
        elif cmd.kind == "motion_ctrl_2":
            if self.arm_status == frames.ARM_NORMAL:
                self.ctrl_mode, self.move_mode = f["ctrl_mode"], f["move_mode"]
                self.speed_rate = max(0, min(100, f["speed_rate"]))
        elif cmd.kind == "joint_ctrl":
            self._joint_target(f["first"], f["a"], f["b"], q_meas)
        elif cmd.kind == "gripper_ctrl":
            self.grip_enabled = f["code"] in (0x01, 0x03)
            if self.grip_enabled and self._can_move():
                self.grip_target_m = max(0.0, f["angle_um"] / 1e6)
                self.grip_effort_nm = min(5.0, f["effort_mnm"] / 1000.0)
        elif cmd.kind == "crash_protection":
            self.crash_levels = [min(8, f[f"j{i + 1}"]) for i in range(6)]
        elif cmd.kind == "search_limits":
            self._reply_limits(f["motor"], f["content"])
        elif cmd.kind == "param_enquiry" and f["enquiry"] == 0x02:
            self.replies.append(
                (frames.CRASH_PROTECTION_FEEDBACK, frames.crash_levels(self.crash_levels))
            )

    def _can_move(self) -> bool:
        return (
            self.arm_status == frames.ARM_NORMAL
            and self.ctrl_mode == 0x01
            and bool(self.enabled.all())
        )

    def _joint_target(self, first: int, a_mdeg: int, b_mdeg: int, q_meas: np.ndarray) -> None:
        if not (self._can_move() and self.move_mode == 0x01):
            return  # the real arm ignores joint commands outside CAN control / MOVE J
        target = (self.target_rad if self.target_rad is not None else q_meas).copy()
        target[first : first + 2] = mdeg_to_rad([a_mdeg, b_mdeg])
        bad = (target < self.lower_rad - 1e-3) | (target > self.upper_rad + 1e-3)
        if bad.any():
            self.err_code |= int(sum(1 << j for j in np.flatnonzero(bad)))
            return
        self.err_code &= ~0x3F
        self.target_rad = np.clip(target, self.lower_rad, self.upper_rad)

    def _hold(self, q_meas: np.ndarray) -> None:
        self.target_rad = None
        self.setpoint_rad = np.asarray(q_meas, dtype=float).copy()
        self.velocity_rad_s[:] = 0.0

    def _reply_limits(self, motor: int, content: int) -> None:
        for j in range(6) if motor in (7, 0xFF) else [motor - 1]:
            if not 0 <= j < 6:
                continue
            if content == 0x01:
                self.replies.append(
                    (
                        frames.MOTOR_ANGLE_LIMIT_MAX_SPD,
                        frames.motor_limits(
                            j + 1,
                            int(round(math.degrees(self.upper_rad[j]) * 10)),
                            int(round(math.degrees(self.lower_rad[j]) * 10)),
                            int(round(self.max_velocity_rad_s[j] * 1000)),
                        ),
                    )
                )
            elif content == 0x02:
                self.replies.append(
                    (
                        frames.MOTOR_MAX_ACC,
                        frames.motor_max_acc(j + 1, int(round(self.max_accel_rad_s2[j] * 1000))),
                    )
                )

    # --- control cycle -------------------------------------------------------------------------
    def step(self, dt_s: float, q_meas: np.ndarray, tau_ext_nm: np.ndarray) -> np.ndarray:
        """Advance the planner by ``dt_s`` [s]; returns the joint setpoint for the motors [rad]."""
        if self.setpoint_rad is None:
            self._hold(q_meas)
        assert self.setpoint_rad is not None
        for j in range(6):  # crash protection: the controller's own stop
            lvl = self.crash_levels[j]
            if lvl and abs(float(tau_ext_nm[j])) > CRASH_THRESHOLD_NM[lvl] and self._can_move():
                self.collided.add(j)
                self.arm_status = frames.ARM_COLLISION
                self._hold(q_meas)
        off = ~self.enabled
        if off.any():  # a disabled motor does not follow: it stays where it is
            self.setpoint_rad[off] = q_meas[off]
            self.velocity_rad_s[off] = 0.0
        if self.target_rad is None or not self._can_move():
            self.velocity_rad_s[:] = 0.0
            return self.setpoint_rad.copy()
        vmax = self.max_velocity_rad_s * max(self.speed_rate, 1) / 100.0
        err = self.target_rad - self.setpoint_rad
        v_stop = np.sqrt(2.0 * self.max_accel_rad_s2 * np.abs(err))  # decelerate in time
        v_des = np.clip(err / dt_s, -np.minimum(vmax, v_stop), np.minimum(vmax, v_stop))
        dv = self.max_accel_rad_s2 * dt_s
        v = np.clip(v_des, self.velocity_rad_s - dv, self.velocity_rad_s + dv)
        v[off] = 0.0
        step = v * dt_s
        done = np.abs(err) <= np.abs(step)
        self.setpoint_rad = np.where(done, self.target_rad, self.setpoint_rad + step)
        self.velocity_rad_s = np.where(done, 0.0, v)
        return self.setpoint_rad.copy()

    def foc_status(self, j: int) -> int:
        bits = frames.FOC_ENABLED if self.enabled[j] else 0
        if j in self.over_current:
            bits |= frames.FOC_OVER_CURRENT
        if j in self.collided:
            bits |= frames.FOC_COLLISION
        return bits

    def motion_done(self) -> bool:
        if self.target_rad is None or self.setpoint_rad is None:
            return True
        return bool(np.allclose(self.setpoint_rad, self.target_rad))
