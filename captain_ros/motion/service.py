"""Guarded Cartesian motion on any :class:`~captain_ros.backends.base.Backend`.

``MotionService(backend)`` implements the motion part of the robot API (``docs/contracts.md``):
``move_to``, ``hold``, ``recover``, ``release``, ``check_motion``, ``preview_motion`` and
``read_motion_trajectory`` (the read-only three in :mod:`captain_ros.motion.queries`, one jaw
command in :mod:`captain_ros.motion.jaw`). Every call returns a
:class:`~captain_ros.core.result.Result` and never raises. A move is a straight sweep (position lerp + slerp) sampled at the 20 ms control tick; the
IK of every tick, the joint limits, the workspace box and collisions (self, other arm, table and
static scene) are checked *before* anything moves. Execution goes tick by tick through
``backend.servo``, which checks the force at every physics substep: ``mode="guarded"`` stops at the
first contact above 5 N, ``mode="manipulation"`` tolerates load up to ``force_limit_n`` (40 N by
default); the 80 N emergency limit is always on. Jaw commands tolerate the manipulation load.

Dual rig: ``arm=None`` routes to the arm holding an object if exactly one does, else to the arm
whose base is nearest to the target. ``arm="both"`` moves both arms together (two-arm lift):
``position`` (and optionally ``orientation``) is then a dict ``{"left": [x, y, z], "right": [...]}``
and both sweeps share one duration and are checked for arm-arm collisions jointly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core import deadline
from captain_ros.core.errors import EStopError, InvalidArgumentError
from captain_ros.core.failures import never_raises
from captain_ros.core.geometry import Pose
from captain_ros.core.result import FailureCategory, Result
from captain_ros.core.types import ForceGuard
from captain_ros.motion import args, path
from captain_ros.motion.executor import Samples, run_ticks
from captain_ros.motion.jaw import jaw_command
from captain_ros.motion.limits import CONTACT_FORCE_N, DEFAULT_FORCE_LIMIT_N, EMERGENCY_FORCE_N
from captain_ros.motion.planner import (
    ArmPlan,
    PlanError,
    check_collisions,
    check_workspace,
    plan_sweep,
)
from captain_ros.motion.queries import MotionQueries, sync_clock
from captain_ros.motion.receipts import motion_result
from captain_ros.motion.recovery import reverse_path
from captain_ros.motion.routing import route_arm
from captain_ros.motion.trajectory import MotionSample, Outcome

SETTLE_TOL_M = 0.002


_physical = never_raises(physical=True, before=sync_clock)


class MotionService(MotionQueries):
    """Guarded motion over ``backend`` (any Backend: MuJoCo, the kinematic fake, hardware)."""

    def __init__(self, backend: Backend, control_dt_s: float = path.CONTROL_DT_S) -> None:
        self.backend = backend
        self.dt_s = control_dt_s
        names = backend.spec.arm_names
        self._last: dict[str, list[MotionSample]] = {a: [] for a in names}
        self._recover_path: dict[str, list[Pose]] = {a: [] for a in names}
        self._last_arm: str | None = None
        self._clock_s = backend.time_s()

    def clear_history(self) -> None:
        """Forget executed trajectories (call after ``backend.restore`` to a later state)."""
        for a in self._last:
            self._last[a] = []
            self._recover_path[a] = []
        self._last_arm = None

    def history_state(self) -> dict[str, Any]:
        """The executed-trajectory memory (what ``recover`` and ``read_motion_trajectory`` use),
        for a decision-point snapshot of the whole episode; samples are frozen, lists are copied."""
        return {
            "last": {a: list(v) for a, v in self._last.items()},
            "recover_path": {a: list(v) for a, v in self._recover_path.items()},
            "last_arm": self._last_arm,
            "clock_s": self._clock_s,
        }

    def restore_history_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`history_state` (after ``backend.restore`` to the same instant)."""
        self._last = {a: list(v) for a, v in state["last"].items()}
        self._recover_path = {a: list(v) for a, v in state["recover_path"].items()}
        self._last_arm = state["last_arm"]
        self._clock_s = float(state["clock_s"])

    def _sync_clock(self) -> None:
        """A backend clock that went backwards means a restore/reset: the history is stale."""
        now = self.backend.time_s()
        if now < self._clock_s:
            self.clear_history()
        self._clock_s = now

    # --- helpers -------------------------------------------------------------------------------
    def _arm_names(self) -> tuple[str, ...]:
        return self.backend.spec.arm_names

    def _route(self, arm: Any, target: np.ndarray | None = None) -> str:
        return route_arm(self.backend, arm, target, self._last_arm)

    def _guard(self, mode: str, force_limit_n: float | None, baseline_n: float = 0.0) -> ForceGuard:
        stop = CONTACT_FORCE_N if mode == "guarded" else (force_limit_n or DEFAULT_FORCE_LIMIT_N)
        return ForceGuard(
            stop_force_n=stop, emergency_force_n=EMERGENCY_FORCE_N, baseline_n=baseline_n
        )

    def _refuse_if_estopped(self) -> None:
        if self.backend.estopped:
            raise EStopError("the e-stop is latched; motion is refused")

    def _remember(self, samples: Samples) -> None:
        for a, trace in samples.items():
            self._last[a] = trace
            self._last_arm = a

    def _execute(self, plans: dict[str, ArmPlan], guard: ForceGuard) -> Outcome:
        """Run the pre-solved joint path tick by tick, then settle on the goal (<= 0.3 s)."""
        b = self.backend
        n = len(next(iter(plans.values())).q)
        steps = [{a: p.q[k] for a, p in plans.items()} for k in range(n)]
        steps += [{a: p.q[-1] for a, p in plans.items()}] * 15

        def settled(k: int, _samples: Samples) -> str | None:
            done = k >= n and all(
                np.linalg.norm(b.ee_pose(a).position_m - p.goal.position_m) < SETTLE_TOL_M
                for a, p in plans.items()
            )
            return "reached" if done else None

        out = run_ticks(b, list(plans), self.dt_s, guard, steps, before=settled)
        self._remember(out.samples)
        return out

    def _velocity_ratio(self, plan: ArmPlan) -> float:
        """Largest per-tick joint step relative to the joint velocity limits (> 1: too fast)."""
        vmax = np.asarray(self.backend.spec.arm(plan.arm).max_velocity_rad_s) * self.dt_s
        q0 = np.asarray(self.backend.joint_state(plan.arm).position_rad, dtype=float)
        steps = np.abs(np.diff(np.vstack([q0, *plan.q]), axis=0))
        return float(np.max(steps / vmax)) if len(steps) else 0.0

    def _goal(self, arm: str, position: Any, orientation: Any) -> tuple[Pose, Pose]:
        start = self.backend.ee_pose(arm)
        p = start.position_m if position is None else args.position(position, f"position[{arm}]")
        q = (
            start.quat_wxyz
            if orientation is None
            else args.orientation(orientation, f"orientation[{arm}]")
        )
        return start, Pose(p, q)

    def _plan(
        self, goals: dict[str, tuple[Pose, Pose]], speed_m_s: float, duration_s: float | None
    ) -> dict[str, ArmPlan]:
        for a, (_s, g) in goals.items():  # before any work proportional to the distance
            check_workspace(self.backend, a, g.position_m)
        dur = duration_s or max(path.sweep_duration_s(s, g, speed_m_s) for s, g in goals.values())
        if dur > path.MAX_SWEEP_S:
            raise InvalidArgumentError(
                f"at speed_m_s={speed_m_s:.3g} this sweep would take {dur:.3g} s, more than "
                f"{path.MAX_SWEEP_S:.0f} s; raise speed_m_s (or give duration_s)"
            )
        plans = {
            a: plan_sweep(self.backend, a, g, path.sweep(s, g, dur, self.dt_s), s)
            for a, (s, g) in goals.items()
        }
        ratio = max(self._velocity_ratio(p) for p in plans.values())
        if ratio > 1.0:  # too fast for the joint velocity limits: stretch the sweep in time
            dur = dur * ratio * 1.05
            if dur > path.MAX_STRETCHED_SWEEP_S:
                raise PlanError(
                    FailureCategory.UNREACHABLE,
                    f"the joint velocity limits would stretch this sweep to {dur:.0f} s; go "
                    "through an intermediate pose",
                    duration_s=round(dur, 1),
                )
            plans = {
                a: plan_sweep(self.backend, a, g, path.sweep(s, g, dur, self.dt_s), s)
                for a, (s, g) in goals.items()
            }
            for p in plans.values():
                p.diagnostics["duration_stretched_to_s"] = round(dur, 3)
        ignored = check_collisions(self.backend, plans)
        for p in plans.values():
            p.diagnostics["start_contacts_ignored"] = ignored
        return plans

    # --- API ------------------------------------------------------------------------------------
    @_physical
    def move_to(
        self,
        position: Any = None,
        orientation: Any = None,
        jaw: Any = None,
        arm: Any = None,
        speed_m_s: Any = 0.05,
        duration_s: Any = None,
        mode: Any = "guarded",
        force_limit_n: Any = None,
    ) -> Result:
        """Move the tool to an absolute pose (straight sweep) OR set the jaw opening [m]."""
        mode = args.mode(mode)
        speed = args.number(speed_m_s, "speed_m_s", 0.0, path.MAX_SPEED_M_S)
        dur = None if duration_s is None else args.number(duration_s, "duration_s", 0.0, 60.0)
        flim = (
            None
            if force_limit_n is None
            else args.number(force_limit_n, "force_limit_n", 0.0, EMERGENCY_FORCE_N)
        )
        if jaw is not None and (position is not None or orientation is not None):
            raise InvalidArgumentError(
                "give either a pose (position/orientation) or a jaw command, not both"
            )
        if jaw is None and position is None and orientation is None:
            raise InvalidArgumentError("give a position and/or orientation, or a jaw command")
        if arm == "both":
            if len(self._arm_names()) < 2 or jaw is not None:
                raise InvalidArgumentError(
                    "arm='both' needs the dual rig and a pose dict {'left': ..., 'right': ...}"
                )
            if not isinstance(position, dict) or set(position) != set(self._arm_names()):
                raise InvalidArgumentError(
                    "with arm='both', position must be {'left': [x,y,z], 'right': [x,y,z]}"
                )
            if orientation is not None and (
                not isinstance(orientation, dict) or not set(orientation) <= set(position)
            ):
                raise InvalidArgumentError(
                    "with arm='both', orientation must be None or {'left': q, 'right': q}"
                )
            goals = {
                a: self._goal(a, position[a], (orientation or {}).get(a)) for a in self._arm_names()
            }
        else:
            target = None if position is None else args.position(position)
            a = self._route(arm, target)
            if jaw is not None:
                value = args.jaw(jaw, self.backend.spec.arm(a).jaw_max_opening_m)
                self._refuse_if_estopped()
                return self._jaw(a, value, flim)
            goals = {a: self._goal(a, position, orientation)}
        self._refuse_if_estopped()
        plans = self._plan(goals, speed, dur)
        jaw_before = {a: self.backend.gripper(a).opening_m for a in plans}
        out = self._execute(plans, self._guard(mode, flim))
        for a, p in plans.items():
            self._recover_path[a] = [s.pose for s in out.samples[a]]
            del p
        return motion_result(self.backend, "move_to", plans, out, jaw_before, mode)

    def _jaw(self, arm: str, value: float, force_limit_n: float | None) -> Result:
        res, samples = jaw_command(
            self.backend, arm, value, self.dt_s, self._guard("manipulation", force_limit_n)
        )
        self._remember(samples)
        return res

    @_physical
    def hold(self, duration_s: Any = 1.0, arm: Any = None) -> Result:
        """Keep the current targets for ``duration_s`` [s] (all arms unless ``arm`` is given)."""
        dur = args.number(duration_s, "duration_s", 0.0, 30.0)
        names = self._arm_names() if arm is None else (self._route(arm),)
        self._refuse_if_estopped()
        b = self.backend
        base = max(b.contact_force_n(a) for a in names)
        guard = ForceGuard(
            stop_force_n=DEFAULT_FORCE_LIMIT_N, emergency_force_n=EMERGENCY_FORCE_N, baseline_n=base
        )
        t0, peak, emergency = b.time_s(), 0.0, False
        n = max(1, int(round(dur / self.dt_s)))
        for _ in range(n):
            if deadline.expired():
                value = {
                    "arms": list(names),
                    "duration_s": round(b.time_s() - t0, 3),
                    "peak_force_n": round(peak, 2),
                }
                return Result.fail(
                    FailureCategory.TIMEOUT,
                    f"{deadline.what()} passed while holding",
                    executed=True,
                    value=value,
                    receipt=f"hold: timeout after {value['duration_s']:.2f} s",
                )
            rep = b.servo({}, self.dt_s, guard)
            peak = max(peak, rep.peak_force_n)
            emergency = emergency or rep.emergency
        value = {
            "arms": list(names),
            "duration_s": round(b.time_s() - t0, 3),
            "peak_force_n": round(peak, 2),
        }
        receipt = f"hold {','.join(names)}: {value['duration_s']:.2f} s, peak {peak:.1f} N"
        if emergency:
            return Result.fail(
                FailureCategory.FORCE_LIMIT,
                "emergency force limit tripped while holding",
                executed=True,
                value=value,
                receipt=receipt,
            )
        return Result.ok("held position", value, executed=True, receipt=receipt)

    @_physical
    def recover(self, distance_m: Any = 0.05, arm: Any = None) -> Result:
        """Back out up to ``distance_m`` [m] along the last executed trajectory (reversed)."""
        dist = args.number(distance_m, "distance_m", 0.0, 0.3)
        a = self._route(arm) if arm is not None else (self._last_arm or self._route(None))
        hist = self._recover_path[a]
        if len(hist) < 2:
            return Result.fail(
                FailureCategory.PRECONDITION,
                f"no executed trajectory of arm {a!r} to reverse; use move_to to back away",
            )
        self._refuse_if_estopped()
        b = self.backend
        rev, cut, acc = reverse_path(hist, b.ee_pose(a), dist)
        if acc < 1e-4:
            return Result.fail(
                FailureCategory.PRECONDITION, "already at the start of the last trajectory"
            )
        poses = path.polyline(rev, 0.05, self.dt_s)
        plan = plan_sweep(b, a, poses[-1], poses, rev[0])
        check_collisions(b, {a: plan})
        guard = ForceGuard(
            stop_force_n=CONTACT_FORCE_N,
            emergency_force_n=EMERGENCY_FORCE_N,
            baseline_n=b.contact_force_n(a),
        )
        jaw_before = {a: b.gripper(a).opening_m}
        out = self._execute({a: plan}, guard)
        self._recover_path[a] = hist[:cut] + [rev[-1]] if out.stop_reason == "reached" else hist
        return motion_result(
            self.backend,
            "recover",
            {a: plan},
            out,
            jaw_before,
            "guarded",
            {"start_force_n": round(guard.baseline_n, 2)},
        )

    @_physical
    def release(self, arm: Any = None) -> Result:
        """Open the jaw fully to let go of a held object; reports whether it was released."""
        names = self._arm_names()
        if arm is None:
            holders = [x for x in names if self.backend.gripper(x).holding]
            a = holders[0] if holders else self._route(None)
        else:
            a = self._route(arm)
        if not self.backend.gripper(a).holding:
            return Result.fail(
                FailureCategory.PRECONDITION,
                f"arm {a!r} holds nothing (no object between both pads); nothing moved",
            )
        self._refuse_if_estopped()
        res = self._jaw(a, self.backend.spec.arm(a).jaw_max_opening_m, None)
        released = not self.backend.gripper(a).holding
        value = dict(res.value or {}, released=released)
        receipt = f"release {a}: released={released}; " + res.receipt
        if not released:
            return Result.fail(
                FailureCategory.PRECONDITION,
                "the jaw opened but the object is still held",
                executed=True,
                value=value,
                receipt=receipt,
            )
        return Result.ok("object released", value, executed=True, receipt=receipt)
