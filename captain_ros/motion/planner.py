"""Pre-execution checks of a Cartesian sweep: workspace, IK of every control tick, joint limits,
collisions. Nothing moves here; a failed check raises :class:`PlanError` with its category, and a
call whose deadline passes while planning raises :class:`~captain_ros.core.deadline.DeadlineExceeded`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core import deadline
from captain_ros.core.errors import CaptainError
from captain_ros.core.geometry import Pose
from captain_ros.core.result import FailureCategory
from captain_ros.motion import ik

COLLISION_CHECK_SPACING_M = 0.01
FINE_POS_TOL_M = 2e-5  # goal configuration tolerance (see solve_path)
FINE_ROT_TOL_RAD = 2e-4
MAX_JOINT_JUMP_RAD = 0.35
TOOL_REACH_MARGIN_M = 0.25


class PlanError(CaptainError):
    """A rejected motion: ``category``, a message that says what to do, and numbers."""

    def __init__(self, category: FailureCategory, message: str, **diagnostics: Any) -> None:
        super().__init__(message)
        self.category = category
        self.message = message
        self.diagnostics = diagnostics

    @property
    def failure_category(self) -> FailureCategory:
        """The category :func:`captain_ros.core.failures.failure_from_exception` reports."""
        return self.category


@dataclass(frozen=True)
class ArmPlan:
    """Tool poses and IK joint targets of one arm at every control tick."""

    arm: str
    start: Pose
    goal: Pose
    poses: list[Pose]
    q: list[np.ndarray]
    ik_position_error_m: float
    ik_rotation_error_rad: float
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def distance_m(self) -> float:
        return float(np.linalg.norm(self.goal.position_m - self.start.position_m))


def check_workspace(backend: Backend, arm: str, p: np.ndarray) -> None:
    spec = backend.spec
    lo, hi = np.asarray(spec.workspace_min_m), np.asarray(spec.workspace_max_m)
    if np.any(p < lo) or np.any(p > hi):
        raise PlanError(
            FailureCategory.WORKSPACE,
            f"target {np.round(p, 3).tolist()} is outside the safety workspace "
            f"x[{lo[0]:.2f},{hi[0]:.2f}] y[{lo[1]:.2f},{hi[1]:.2f}] z[{lo[2]:.2f},{hi[2]:.2f}] m; "
            "choose a target inside it",
            target_m=p.tolist(),
        )
    base = spec.arm(arm).base_pose.position_m
    reach = spec.arm(arm).reach_m + TOOL_REACH_MARGIN_M
    if np.linalg.norm(p - base) > reach:
        raise PlanError(
            FailureCategory.UNREACHABLE,
            f"target is {np.linalg.norm(p - base):.3f} m from the {arm} arm base, beyond its "
            f"reach ({reach:.2f} m); choose a closer target",
            target_m=p.tolist(),
        )


def solve_path(
    backend: Backend, arm: str, poses: list[Pose], q0: np.ndarray
) -> tuple[list[np.ndarray], ik.IKResult]:
    """IK of every pose, each warm-started from the previous solution."""
    kin = backend.kinematics(arm)
    spec = backend.spec.arm(arm)
    lo, hi = spec.lower_rad, spec.upper_rad
    qs: list[np.ndarray] = []
    q = np.asarray(q0, dtype=float)
    check_goal(kin, poses[-1], q, lo, hi, spec.joint_names)
    res = ik.IKResult(q, 0.0, 0.0, True, 0)
    for k, pose in enumerate(poses):
        deadline.check("solving the IK of the sweep")
        # predictor: extrapolate the joint path linearly; the DLS corrector rarely needs a step
        seed = np.clip(2 * q - qs[-2], lo, hi) if len(qs) >= 2 else q
        res = ik.solve(kin, pose, seed, lo, hi, max_iters=60)
        if not res.converged and len(qs) >= 2:
            res = ik.solve(kin, pose, q, lo, hi, max_iters=60)
        if not res.converged and k == len(poses) - 1:
            res = _restarts(kin, pose, q, lo, hi) or res
        if not res.converged:
            free = ik.solve(kin, pose, q, lo - 2 * np.pi, hi + 2 * np.pi, max_iters=100)
            frac = (k + 1) / len(poses)
            if free.converged:
                bad = [
                    spec.joint_names[i]
                    for i in range(len(lo))
                    if free.q[i] < lo[i] or free.q[i] > hi[i]
                ]
                raise PlanError(
                    FailureCategory.JOINT_LIMIT,
                    f"the sweep would leave the joint limits ({', '.join(bad)}) at {frac:.0%} of "
                    "the path; approach from another direction or tilt the tool",
                    joints=bad,
                    at_fraction=frac,
                )
            raise PlanError(
                FailureCategory.UNREACHABLE,
                f"IK has no solution at {frac:.0%} of the path (residual {res.position_error_m * 1000:.1f} mm, "
                f"{np.degrees(res.rotation_error_rad):.1f} deg); choose a pose closer to the robot or "
                "another tool orientation",
                ik_residual_m=res.position_error_m,
                ik_residual_rad=res.rotation_error_rad,
                at_fraction=frac,
            )
        if qs and float(np.max(np.abs(res.q - qs[-1]))) > MAX_JOINT_JUMP_RAD:
            raise PlanError(
                FailureCategory.UNREACHABLE,
                "the straight sweep passes too close to a singularity (joint jump); go through an "
                "intermediate pose",
                at_fraction=(k + 1) / len(poses),
            )
        q = res.q
        qs.append(q)
    # the goal configuration to a tight tolerance: within the per-tick tolerance (1 mm, 0.01 rad)
    # it would depend on the path's sampling, i.e. on the speed, and a check_motion verdict (at
    # its default speed) could then differ from the move's near a contact at the goal
    fine = ik.solve(
        kin,
        poses[-1],
        q,
        lo,
        hi,
        max_iters=30,
        pos_tol_m=FINE_POS_TOL_M,
        rot_tol_rad=FINE_ROT_TOL_RAD,
    )
    if fine.converged and float(np.max(np.abs(fine.q - q))) <= MAX_JOINT_JUMP_RAD:
        qs[-1], res = fine.q, fine
    return qs, res


def check_goal(
    kin: Any, goal: Pose, q0: np.ndarray, lo: np.ndarray, hi: np.ndarray, names: tuple[str, ...]
) -> None:
    """Reject a goal pose that no configuration reaches (UNREACHABLE) or only outside the limits."""
    rng = np.random.default_rng(0)  # deterministic restarts
    seeds = [q0] + [rng.uniform(lo, hi) for _ in range(5)]
    best = None
    for seed in seeds:
        r = ik.solve(kin, goal, seed, lo, hi, max_iters=80)
        if r.converged:
            return
        best = r if best is None or r.position_error_m < best.position_error_m else best
    wide_lo, wide_hi = lo - np.pi, hi + np.pi
    for seed in seeds[:3]:
        free = ik.solve(kin, goal, seed, wide_lo, wide_hi, max_iters=100)
        if free.converged:
            bad = [names[i] for i in range(len(lo)) if free.q[i] < lo[i] or free.q[i] > hi[i]]
            raise PlanError(
                FailureCategory.JOINT_LIMIT,
                f"the target pose needs {', '.join(bad)} beyond its limits; tilt the tool or "
                "choose another approach direction",
                joints=bad,
            )
    assert best is not None
    raise PlanError(
        FailureCategory.UNREACHABLE,
        f"IK finds no solution for the target (residual {best.position_error_m * 1000:.0f} mm, "
        f"{np.degrees(best.rotation_error_rad):.0f} deg); choose a pose closer to the robot or "
        "another tool orientation",
        ik_residual_m=best.position_error_m,
        ik_residual_rad=best.rotation_error_rad,
    )


def _restarts(
    kin: Any, pose: Pose, q: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> ik.IKResult | None:
    rng = np.random.default_rng(0)  # deterministic restarts
    for _ in range(6):
        r = ik.solve(kin, pose, rng.uniform(lo, hi), lo, hi, max_iters=80)
        if r.converged:
            raise PlanError(
                FailureCategory.UNREACHABLE,
                "the target is reachable only in another arm configuration, not by a straight "
                "sweep from here; move through an intermediate pose first",
                ik_residual_m=r.position_error_m,
            )
    return None


def check_collisions(backend: Backend, plans: Mapping[str, ArmPlan]) -> list[str]:
    """Collision pairs along the joint paths (pairs already present at the start are tolerated)."""
    arms = list(plans)
    kin = backend.kinematics(arms[0])
    start = {a: np.asarray(backend.joint_state(a).position_rad, dtype=float) for a in arms}
    ignore = set(kin.collisions(start))
    n = len(plans[arms[0]].q)
    step_m = max(
        max(
            float(np.linalg.norm(p.poses[0].position_m - p.start.position_m))
            for p in plans.values()
        ),
        1e-6,
    )
    every = max(1, int(COLLISION_CHECK_SPACING_M / step_m))
    ks = sorted(set(range(every - 1, n, every)) | {n - 1})
    for k in ks:
        deadline.check("checking the sweep for collisions")
        hits = [c for c in kin.collisions({a: plans[a].q[k] for a in arms}) if c not in ignore]
        if hits:
            raise PlanError(
                FailureCategory.COLLISION,
                f"the path collides ({', '.join(hits[:3])}) at {(k + 1) / n:.0%} of the sweep; "
                "choose a target away from the table, the other arm and the robot itself",
                pairs=hits,
                at_fraction=(k + 1) / n,
            )
    return sorted(ignore)


def plan_sweep(backend: Backend, arm: str, goal: Pose, poses: list[Pose], start: Pose) -> ArmPlan:
    """Workspace + IK checks of one arm's sweep (collisions are checked jointly afterwards)."""
    check_workspace(backend, arm, goal.position_m)
    q0 = backend.joint_state(arm).position_rad
    qs, last = solve_path(backend, arm, poses, q0)
    return ArmPlan(arm, start, goal, poses, qs, last.position_error_m, last.rotation_error_rad)
