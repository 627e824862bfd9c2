"""A planar locomotion model: what a whole-body walking controller does with velocity commands.

This stands in for the paper's SONIC policies (frozen whole-body controllers that track motion
references). It is *not* a walking controller: it produces the base reference that the MuJoCo base
servos track, with the properties a coordinator has to live with:

* commands are body-frame planar velocities, clipped to the controller's limits (forward, backward,
  lateral, turn rate) and acceleration-limited; the clipped command is what the call returns;
* a watchdog replaces a command that is not refreshed within ``command_timeout_s`` by zero;
* tracking is imperfect: each robot's realised velocity has a slowly varying scale error and a
  heading error on translation and a scale error on turning (Ornstein-Uhlenbeck processes drawn from
  the bridge's seeded generator), so two robots given identical commands do not move identically;
* the pelvis bobs with the gait (amplitude grows with speed, independent phase per robot) and its
  height follows a rate-limited target (squatting for placement).

All state lives in :class:`LocoState` so a snapshot restores it exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from captain_ros.backends.humanoid.types import BaseLimits, BaseVelocity

SCALE_STD = 0.03
"""Stationary std of the translation-speed scale error."""
HEADING_STD_RAD = 0.015
"""Stationary std of the heading error of translation [rad]."""
YAW_SCALE_STD = 0.03
"""Stationary std of the turn-rate scale error."""
NOISE_TAU_S = 4.0
"""Correlation time of the tracking errors [s]."""
BOB_AMPLITUDE_M = 0.008
"""Pelvis bobbing amplitude at the lateral speed limit [m]."""
STEP_FREQUENCY_HZ = 1.8


@dataclass(frozen=True)
class LocoState:
    """Locomotion state of one robot (all that a snapshot needs).

    Attributes:
        ref: Base reference ``(x_m, y_m, yaw_rad)`` the servos track.
        vel: Realised reference velocity ``(vx, vy, wz)`` before the tracking error.
        cmd: Last commanded (clipped) velocity.
        cmd_stamp_s: Time of the last command [s].
        expired: The watchdog zeroed the command (cleared by the next command).
        height_ref_m / height_target_m: Pelvis height offset reference and target [m].
        errors: Tracking errors ``(scale, heading_rad, yaw_scale)``.
        phase_rad: Gait phase of the bobbing.
    """

    ref: tuple[float, float, float]
    vel: tuple[float, float, float] = (0.0, 0.0, 0.0)
    cmd: BaseVelocity = BaseVelocity()
    cmd_stamp_s: float = 0.0
    expired: bool = False
    height_ref_m: float = 0.0
    height_target_m: float = 0.0
    errors: tuple[float, float, float] = (0.0, 0.0, 0.0)
    phase_rad: float = 0.0


class Locomotion:
    """Steps the :class:`LocoState` of one robot at the control rate.

    Args:
        limits: The controller's limits.
        dt_s: Control period [s].
        noise: Scale of the tracking errors (1 = nominal, 0 = ideal tracking).
    """

    def __init__(self, limits: BaseLimits, dt_s: float, noise: float = 1.0) -> None:
        self.limits = limits
        self.dt_s = float(dt_s)
        self.noise = float(noise)

    def command(
        self, s: LocoState, v: BaseVelocity, now_s: float
    ) -> tuple[LocoState, BaseVelocity]:
        """Accept a velocity command; returns the new state and the clipped command."""
        applied = v.clipped(self.limits)
        return replace(s, cmd=applied, cmd_stamp_s=now_s, expired=False), applied

    def command_height(self, s: LocoState, offset_m: float) -> tuple[LocoState, float]:
        """Set the pelvis height target (clipped to the range); returns it."""
        h = min(max(float(offset_m), self.limits.height_min_m), self.limits.height_max_m)
        return replace(s, height_target_m=h), h

    def halt(self, s: LocoState) -> LocoState:
        """Zero velocity at once (e-stop, fall): the reference stays where it is."""
        return replace(s, cmd=BaseVelocity(), vel=(0.0, 0.0, 0.0), height_target_m=s.height_ref_m)

    def step(self, s: LocoState, now_s: float, rng: np.random.Generator) -> tuple[LocoState, float]:
        """One control tick; returns the new state and the pelvis height servo target [m]."""
        lim, dt = self.limits, self.dt_s
        cmd, expired = s.cmd, s.expired
        if now_s - s.cmd_stamp_s > lim.command_timeout_s and (
            cmd.vx_m_s or cmd.vy_m_s or cmd.wz_rad_s
        ):
            cmd, expired = BaseVelocity(), True
        vx, vy, wz = s.vel
        dv = lim.accel_m_s2 * dt
        vx += min(max(cmd.vx_m_s - vx, -dv), dv)
        vy += min(max(cmd.vy_m_s - vy, -dv), dv)
        dw = lim.yaw_accel_rad_s2 * dt
        wz += min(max(cmd.wz_rad_s - wz, -dw), dw)
        # tracking errors: discretised Ornstein-Uhlenbeck processes
        a = math.exp(-dt / NOISE_TAU_S)
        b = math.sqrt(1.0 - a * a) * self.noise
        z = rng.standard_normal(3)
        e_s = a * s.errors[0] + b * SCALE_STD * z[0]
        e_h = a * s.errors[1] + b * HEADING_STD_RAD * z[1]
        e_w = a * s.errors[2] + b * YAW_SCALE_STD * z[2]
        c, sn = math.cos(e_h), math.sin(e_h)
        bx, by = (1.0 + e_s) * (c * vx - sn * vy), (1.0 + e_s) * (sn * vx + c * vy)
        x, y, yaw = s.ref
        yaw_mid = yaw + 0.5 * (1.0 + e_w) * wz * dt
        x += (math.cos(yaw_mid) * bx - math.sin(yaw_mid) * by) * dt
        y += (math.sin(yaw_mid) * bx + math.cos(yaw_mid) * by) * dt
        yaw += (1.0 + e_w) * wz * dt
        dh = lim.height_rate_m_s * dt
        h = s.height_ref_m + min(max(s.height_target_m - s.height_ref_m, -dh), dh)
        speed = math.hypot(vx, vy) + 0.3 * abs(wz)
        phase = s.phase_rad + (2.0 * math.pi * STEP_FREQUENCY_HZ * dt if speed > 1e-3 else 0.0)
        bob = BOB_AMPLITUDE_M * min(1.5, speed / lim.lateral_m_s) * math.sin(phase) * self.noise
        new = LocoState(
            (x, y, yaw),
            (vx, vy, wz),
            cmd,
            s.cmd_stamp_s,
            expired,
            h,
            s.height_target_m,
            (e_s, e_h, e_w),
            phase % (2.0 * math.pi),
        )
        return new, h + bob
