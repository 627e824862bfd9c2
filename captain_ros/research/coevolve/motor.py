"""Skill wrappers: execute one validated joint command on the humanoid bridge.

A joint command is one skill call per robot (the committed primitive with each robot's effective
arguments). Both robots' skill programs run together at the planner rate (10 Hz): each tick sends
every robot its body-frame velocity command (which also feeds the controller's watchdog) and, when
they change, pelvis-height and arm-posture targets, then lets the bridge run for one planner
period. The programs are open loop after their start (as skill wrappers over motion-tracking
controllers are): each robot's profile is computed from its measured pose when the transaction
starts, so tracking errors, command clipping and unsynchronised timing show up in the outcome
rather than being corrected silently. Joint dispatch is a logical transaction, not a hard
real-time synchronisation barrier. Profiles follow the controllers' clock, so a tick that arrives
late (a stalled coordinator while the controller free-runs over ROS) skips part of a profile rather
than stretching it; but it never skips the program's final commands or a discrete event (an arm
posture, a pelvis-height step): those are sent late, and the transaction then runs the time the
program leaves after them, plus the settling time.

Execution stops early when the bridge stops (e-stop, a fall) or the payload drops (simulation:
from the privileged monitor); the robots are then halted. The trace keeps what the verifier and the
report need: requested vs applied (clipped) commands, watchdog events, 10 Hz samples, the bridge's
monitor extrema.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from captain_ros.backends.humanoid.bridge import HumanoidBridge
from captain_ros.backends.humanoid.support import SUPPORT_RAMP_S, posture
from captain_ros.backends.humanoid.types import BaseVelocity, HumanoidState
from captain_ros.core.errors import CaptainError
from captain_ros.research.coevolve.strategy import ROBOTS, Coordination

PLANNER_DT_S = 0.1
SETTLE_S = 0.6
MAX_TRANSACTION_S = 45.0
LINEAR_ACCEL_M_S2 = 0.5
ANGULAR_ACCEL_RAD_S2 = 0.4
RELEASE_RAMP_S = 1.5
PIVOT_RADIUS_GAIN = 0.8
"""Arc walker's radial correction [1/s] (keeps the distance to the pivot robot)."""
PIVOT_FACING_GAIN = 0.8
"""Arc walker's heading correction towards its partner [1/s]."""
DROP_LOWEST_Z_M = 0.35


@dataclass(frozen=True)
class Trapezoid:
    """A trapezoidal rate profile covering ``total`` with cruise ``v_max`` and ramps ``a_max``."""

    total: float
    v_max: float
    a_max: float

    @property
    def duration_s(self) -> float:
        d, v, a = abs(self.total), self.v_max, self.a_max
        if d <= 0:
            return 0.0
        if d < v * v / a:  # triangular
            return 2.0 * math.sqrt(d / a)
        return d / v + v / a

    def rate(self, t: float) -> float:
        """Signed rate at time ``t`` [s]."""
        d, v, a = abs(self.total), self.v_max, self.a_max
        big_t = self.duration_s
        if d <= 0 or t < 0 or t >= big_t:
            return 0.0
        peak = min(v, math.sqrt(d * a))
        r = min(peak, a * t, a * (big_t - t))
        return math.copysign(r, self.total)


@dataclass
class _RobotProgram:
    """What one robot does over the transaction: velocity profile plus posture/height events."""

    duration_s: float
    velocity: Any = None  # callable t -> BaseVelocity (body frame)
    height: Any = None  # callable t -> height offset target [m]
    arms: list[tuple[float, np.ndarray, float]] = field(default_factory=list)  # (t, q, ramp_s)
    heights: list[tuple[float, float]] = field(default_factory=list)  # (t, offset_m) steps
    feedback: bool = False  # velocity(t, states): closed loop on the measured partner pose


@dataclass(frozen=True)
class ExecutionTrace:
    """What happened during one dispatched transaction.

    Attributes:
        duration_s: Time the transaction ran on the bridge clock [s].
        stopped / reason: Stopped early and why (e-stop, fall, payload drop).
        clipped: Per robot, the commands the controller clipped (``"vy 0.44 -> 0.30 m/s"``).
        watchdog: Robots whose velocity command expired.
        samples: 10 Hz samples (time, payload position/tilt, palm forces, robot poses).
        monitor: The bridge's extrema over the whole transaction (simulation).
        window: Payload extrema over the release stability window (release only).
    """

    duration_s: float
    stopped: bool
    reason: str
    clipped: dict[str, list[str]]
    watchdog: tuple[str, ...]
    samples: list[dict[str, Any]]
    monitor: dict[str, Any]
    window: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "duration_s": self.duration_s,
            "stopped": self.stopped,
            "reason": self.reason,
            "clipped": self.clipped,
            "watchdog": list(self.watchdog),
            "monitor": self.monitor,
            "window": self.window,
            "n_samples": len(self.samples),
        }


def _rot_to_body(yaw: float, v: np.ndarray) -> tuple[float, float]:
    c, s = math.cos(yaw), math.sin(yaw)
    return c * v[0] + s * v[1], -s * v[0] + c * v[1]


def _program(
    z: Coordination, robot: str, args: dict[str, Any], st: dict[str, HumanoidState]
) -> _RobotProgram:
    me = st[robot]
    other = st[ROBOTS[1 - ROBOTS.index(robot)]]
    yaw0 = me.base.yaw_rad
    name = z.primitive
    if name == "initialization":
        return _RobotProgram(
            SUPPORT_RAMP_S + 1.0,
            arms=[(0.0, posture("support"), SUPPORT_RAMP_S)],
            heights=[(SUPPORT_RAMP_S, 0.0)],
        )
    if name == "coordinated_linear_transport":
        d = np.asarray(args["direction_xy"], float)
        d = d / np.linalg.norm(d)
        prof = Trapezoid(float(args["distance_m"]), float(args["speed_m_s"]), LINEAR_ACCEL_M_S2)
        bx, by = _rot_to_body(yaw0, d)
        return _RobotProgram(
            prof.duration_s,
            velocity=lambda t: BaseVelocity(bx * prof.rate(t), by * prof.rate(t), 0.0),
        )
    if name == "coordinated_pivot":
        prof = Trapezoid(
            float(args["angle_rad"]), float(args["angular_speed_rad_s"]), ANGULAR_ACCEL_RAD_S2
        )
        radius = float(np.linalg.norm(me.base.xy - other.base.xy))
        role = args["role"]
        arm = {"inner_support": 0.0, "outer_mover": radius, "co_rotator": radius / 2.0}[role]

        def arc(t: float, now: dict[str, HumanoidState] | None = None) -> BaseVelocity:
            w = prof.rate(t)
            vx = wz_fix = 0.0
            if (
                now is not None and w != 0.0
            ):  # keep the arc's radius (walkers) and face the partner (all)
                rel = now[other.name].base.xy - now[robot].base.xy
                dist = float(np.linalg.norm(rel))
                if arm > 0.0:
                    vx = float(
                        np.clip(PIVOT_RADIUS_GAIN * (dist - radius) * (arm / radius), -0.05, 0.05)
                    )
                facing = math.atan2(rel[1], rel[0]) - now[robot].base.yaw_rad
                wz_fix = float(
                    np.clip(PIVOT_FACING_GAIN * math.remainder(facing, 2 * math.pi), -0.1, 0.1)
                )
            return BaseVelocity(vx, -arm * w, w + wz_fix)

        return _RobotProgram(prof.duration_s, velocity=arc, feedback=True)
    if name == "coordinated_alignment":
        c = np.asarray(args["correction_xy"], float)
        dyaw = float(args["yaw_correction_rad"])
        norm = float(np.linalg.norm(c))
        speed = float(args["speed_m_s"])
        # one progress variable s in [0, 1]: translation at `speed`, turning at most 0.15 rad/s
        rate = min(
            speed / norm if norm > 1e-9 else math.inf, 0.15 / abs(dyaw) if dyaw else math.inf
        )
        if not math.isfinite(rate):
            return _RobotProgram(0.0)
        prof = Trapezoid(1.0, rate, 0.6 * rate)
        bx, by = _rot_to_body(yaw0, c)
        return _RobotProgram(
            prof.duration_s,
            velocity=lambda t: BaseVelocity(
                bx * prof.rate(t), by * prof.rate(t), dyaw * prof.rate(t)
            ),
        )
    if name == "placement":
        lower, speed = float(args["lower_m"]), float(args["speed_m_s"])
        h0 = me.height_offset_m
        return _RobotProgram(lower / speed + 0.5, height=lambda t: h0 - min(lower, speed * t))
    if name == "release":
        return _RobotProgram(
            RELEASE_RAMP_S + float(args["hold_s"]), arms=[(0.0, posture("release"), RELEASE_RAMP_S)]
        )
    if name == "retreat":
        prof = Trapezoid(float(args["distance_m"]), float(args["speed_m_s"]), LINEAR_ACCEL_M_S2)
        return _RobotProgram(
            prof.duration_s, velocity=lambda t: BaseVelocity(-prof.rate(t), 0.0, 0.0)
        )
    raise CaptainError(f"no skill wrapper for {name!r}")


def _sample(bridge: HumanoidBridge) -> dict[str, Any] | None:
    try:
        p = bridge.privileged_state()
    except CaptainError:
        return None
    return {
        "t": p["time_s"],
        "payload": p["payload"]["position_m"],
        "tilt_rad": p["payload"]["tilt_rad"],
        "lowest_z_m": p["payload"]["lowest_z_m"],
        "touches": p["payload"]["touches"],
        "palm_force_n": {r: sum(v) for r, v in p["palm_force_n"].items()},
        "bases": {r: s["base"] for r, s in p["robots"].items()},
    }


class MotorInterface:
    """Executes joint commands on ``bridge`` (the host side; generated code never sees it)."""

    def __init__(self, bridge: HumanoidBridge) -> None:
        self.bridge = bridge

    def resync(self) -> None:
        """Zero every robot's velocity command (after a restore or a halt)."""
        for r in ROBOTS:
            with contextlib.suppress(CaptainError):
                self.bridge.command_velocity(r, BaseVelocity())

    def execute(self, z: Coordination, theta: dict[str, dict[str, Any]]) -> ExecutionTrace:
        b = self.bridge
        st = {r: b.state(r) for r in ROBOTS}
        progs = {r: _program(z, r, theta[r], st) for r in ROBOTS}
        total = min(max(p.duration_s for p in progs.values()), MAX_TRANSACTION_S)
        clipped: dict[str, list[str]] = {r: [] for r in ROBOTS}
        watchdog: set[str] = set()
        samples: list[dict[str, Any]] = []
        window: dict[str, Any] = {}
        sent_height: dict[str, float | None] = {r: None for r in ROBOTS}
        arms_done: dict[str, int] = {r: 0 for r in ROBOTS}
        steps_done: dict[str, int] = {r: 0 for r in ROBOTS}
        with contextlib.suppress(CaptainError):
            b.reset_monitor()
        t0 = b.time_s()
        stopped, reason = False, ""
        t = 0.0
        end = total + SETTLE_S
        final = False
        while t < end - 1e-6 or not final:
            # profiles are indexed by the controllers' clock, so a late planner tick (e.g. over ROS)
            # does not stretch them; but no tick skips the program's end or a discrete event: the
            # final commands are always sent and settle, and an event sent late still gets the
            # time its program leaves after it
            moving = t < total - 1e-9
            if not moving and not final:
                final, end = True, max(end, t + SETTLE_S)
            now = (
                {r: b.state(r) for r in ROBOTS} if any(p.feedback for p in progs.values()) else None
            )
            for r, p in progs.items():
                if moving and p.velocity:
                    v = p.velocity(t, now) if p.feedback else p.velocity(t)
                else:
                    v = BaseVelocity()
                applied = b.command_velocity(r, v)
                if moving and applied != v:
                    _note_clip(clipped[r], v, applied)
                h = p.height(t) if p.height else None
                while steps_done[r] < len(p.heights) and p.heights[steps_done[r]][0] <= t + 1e-9:
                    te, h = p.heights[steps_done[r]]
                    steps_done[r] += 1
                    end = max(end, t - te + total + SETTLE_S)
                if h is not None and h != sent_height[r]:
                    sent_height[r] = b.command_height(r, h)
                while arms_done[r] < len(p.arms) and p.arms[arms_done[r]][0] <= t + 1e-9:
                    te, q, ramp = p.arms[arms_done[r]]
                    b.command_arms(r, q, ramp)
                    arms_done[r] += 1
                    end = max(end, t - te + total + SETTLE_S)
            rep = b.advance(PLANNER_DT_S)
            watchdog.update(rep.watchdog_expired)
            s = _sample(b)
            if s is not None:
                samples.append(s)
                if z.primitive == "release" and b.time_s() - t0 >= RELEASE_RAMP_S - 1e-9:
                    _window(window, s)
            if rep.stopped:
                stopped, reason = True, rep.reason
                break
            if s is not None and ("floor" in s["touches"] or s["lowest_z_m"] < DROP_LOWEST_Z_M):
                stopped, reason = True, "payload dropped"
                break
            t = b.time_s() - t0
        if stopped:
            self.resync()
            if "e-stop" not in reason:
                b.advance(SETTLE_S)
        try:
            monitor = dict(b.privileged_state()["monitor"])
        except CaptainError:
            monitor = {}
        return ExecutionTrace(
            b.time_s() - t0,
            stopped,
            reason,
            {r: c[:3] for r, c in clipped.items()},
            tuple(sorted(watchdog)),
            samples,
            monitor,
            window,
        )


def _note_clip(notes: list[str], want: BaseVelocity, got: BaseVelocity) -> None:
    for attr, unit in (("vx_m_s", "m/s"), ("vy_m_s", "m/s"), ("wz_rad_s", "rad/s")):
        a, g = getattr(want, attr), getattr(got, attr)
        if abs(a - g) > 1e-9:
            key = attr.split("_")[0]
            text = f"{key} {a:+.2f} -> {g:+.2f} {unit}"
            prev = [i for i, n in enumerate(notes) if n.startswith(key + " ")]
            if prev:
                old = notes[prev[0]]
                if abs(float(old.split()[1])) < abs(a):
                    notes[prev[0]] = text
            else:
                notes.append(text)


def _window(w: dict[str, Any], s: dict[str, Any]) -> None:
    if "start" not in w:
        w.update(
            start=s["payload"],
            max_tilt_rad=0.0,
            max_drift_m=0.0,
            duration_s=0.0,
            t0=s["t"],
            max_palm_force_n=0.0,
        )
    w["max_tilt_rad"] = max(w["max_tilt_rad"], s["tilt_rad"])
    w["max_drift_m"] = max(
        w["max_drift_m"], float(np.linalg.norm(np.subtract(s["payload"], w["start"])))
    )
    w["duration_s"] = s["t"] - w["t0"]
    w["max_palm_force_n"] = max(w["max_palm_force_n"], *s["palm_force_n"].values())
