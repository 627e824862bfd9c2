"""The motion service's read-only queries: would a sweep pass its pre-checks
(``check_motion``), what it would look like (``preview_motion``), and the samples of the last
motion (``read_motion_trajectory``). Nothing moves; they plan with the service's own planner.

:class:`MotionQueries` is mixed into :class:`captain_ros.motion.service.MotionService`, which
provides the planner, the routing and the motion history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.failures import never_raises
from captain_ros.core.geometry import Pose
from captain_ros.core.result import Result
from captain_ros.motion import args, path
from captain_ros.motion.planner import ArmPlan, PlanError
from captain_ros.motion.trajectory import MotionSample


def sync_clock(service: Any) -> None:
    """``before`` hook of the capability guards: the service checks its clock first."""
    service._sync_clock()


_readonly = never_raises(physical=False, before=sync_clock)


class MotionQueries:
    """Read-only motion queries over the service's planner (see the module docstring)."""

    backend: Backend
    _last: dict[str, list[MotionSample]]
    _last_arm: str | None

    if TYPE_CHECKING:  # provided by MotionService

        def _route(self, arm: Any, target: np.ndarray | None = None) -> str: ...

        def _goal(self, arm: str, position: Any, orientation: Any) -> tuple[Pose, Pose]: ...

        def _plan(
            self, goals: dict[str, tuple[Pose, Pose]], speed_m_s: float, duration_s: float | None
        ) -> dict[str, ArmPlan]: ...

    def _check(
        self, position: Any, orientation: Any, arm: Any, speed_m_s: float
    ) -> tuple[str, dict[str, Any], dict[str, ArmPlan] | None]:
        target = args.position(position)
        a = self._route(arm, target)
        start, goal = self._goal(a, target, orientation)
        verdict: dict[str, Any] = {
            "arm": a,
            "distance_m": round(float(np.linalg.norm(target - start.position_m)), 4),
        }
        dur = path.sweep_duration_s(start, goal, speed_m_s)
        verdict["predicted_duration_s"] = round(dur, 3)
        try:
            plans = self._plan({a: (start, goal)}, speed_m_s, None)
        except PlanError as e:
            verdict.update(
                feasible=False,
                category=e.category.value,
                reason=e.message,
                **{k: v for k, v in e.diagnostics.items() if k != "target_m"},
            )
            return a, verdict, None
        p = plans[a]
        verdict.update(
            feasible=True,
            category=None,
            reachable=True,
            joint_limits_ok=True,
            collision_free=True,
            ik_residual_m=round(p.ik_position_error_m, 6),
            ik_residual_rad=round(p.ik_rotation_error_rad, 6),
        )
        return a, verdict, plans

    @_readonly
    def check_motion(self, position: Any, orientation: Any = None, arm: Any = None) -> Result:
        """Read-only: would ``move_to(position, orientation)`` pass its pre-checks? Nothing moves."""
        a, verdict, _ = self._check(position, orientation, arm, 0.05)
        if not verdict["feasible"]:
            verdict.setdefault("reachable", verdict["category"] not in ("unreachable", "workspace"))
            verdict.setdefault("joint_limits_ok", verdict["category"] != "joint_limit")
            verdict.setdefault("collision_free", verdict["category"] != "collision")
        msg = "feasible" if verdict["feasible"] else f"infeasible: {verdict['reason']}"
        return Result.ok(msg, verdict, receipt=f"check_motion {a}: {msg}"[:300])

    @_readonly
    def preview_motion(
        self, position: Any, orientation: Any = None, arm: Any = None, speed_m_s: Any = 0.05
    ) -> Result:
        """Read-only: sampled waypoints, joint path, duration and minimum clearance of a sweep."""
        speed = args.number(speed_m_s, "speed_m_s", 0.0, path.MAX_SPEED_M_S)
        a, verdict, plans = self._check(position, orientation, arm, speed)
        if plans is not None:
            p = plans[a]
            idx = np.unique(np.linspace(0, len(p.q) - 1, min(10, len(p.q))).astype(int))
            verdict["waypoints_m"] = [
                [round(float(v), 4) for v in p.poses[i].position_m] for i in idx
            ]
            verdict["joint_path_rad"] = [[round(float(v), 4) for v in p.q[i]] for i in idx]
            kin = self.backend.kinematics(a)
            clear = getattr(kin, "clearance_m", None)
            verdict["min_clearance_m"] = (
                None if clear is None else round(min(clear({a: p.q[i]}) for i in idx), 4)
            )
        msg = "feasible" if verdict["feasible"] else f"infeasible: {verdict['reason']}"
        return Result.ok(
            msg,
            verdict,
            receipt=f"preview_motion {a}: {msg}, {verdict['predicted_duration_s']:.2f} s"[:300],
        )

    @_readonly
    def read_motion_trajectory(self, arm: Any = None, last_n: Any = 50) -> Result:
        """The last ``last_n`` samples (t, tool position, jaw, force) of the arm's last motion."""
        if (
            isinstance(last_n, bool)
            or not isinstance(last_n, (int, np.integer))
            or not 1 <= last_n <= 10000
        ):
            raise InvalidArgumentError(f"last_n must be an integer in [1, 10000], got {last_n!r}")
        a = self._route(arm) if arm is not None else (self._last_arm or self._route(None))
        s = self._last[a][-int(last_n) :]
        value = {"arm": a, "samples": [x.to_dict() for x in s], "n_total": len(self._last[a])}
        return Result.ok(
            f"{len(s)} samples", value, receipt=f"read_motion_trajectory {a}: {len(s)} samples"
        )
