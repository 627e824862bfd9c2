"""Results and receipts of executed motions (stop reason, distances, peak force, jaw before/after)."""

from __future__ import annotations

from typing import Any

from captain_ros.backends.base import Backend
from captain_ros.core import deadline
from captain_ros.core.result import FailureCategory, Result
from captain_ros.motion.limits import CONTACT_FORCE_N, EMERGENCY_FORCE_N
from captain_ros.motion.planner import ArmPlan
from captain_ros.motion.trajectory import Outcome, trace


def motion_result(
    b: Backend,
    name: str,
    plans: dict[str, ArmPlan],
    out: Outcome,
    jaw_before: dict[str, float],
    mode: str,
    extra: dict[str, Any] | None = None,
) -> Result:
    """The Result of an executed sweep: value fields, message and the <= 300-char receipt."""
    per_arm: dict[str, dict[str, Any]] = {}
    for a, p in plans.items():
        pose = b.ee_pose(a)
        per_arm[a] = {
            "executed_distance_m": round(out.distance_m(a), 4),
            "planned_distance_m": round(p.distance_m, 4),
            "tcp_position_m": [round(float(v), 4) for v in pose.position_m],
            "tcp_quat_wxyz": [round(float(v), 4) for v in pose.quat_wxyz],
            "jaw_before_m": round(jaw_before[a], 4),
            "jaw_after_m": round(b.gripper(a).opening_m, 4),
            "holding": b.gripper(a).holding,
        }
    value: dict[str, Any] = {
        "arm": "both" if len(plans) > 1 else next(iter(plans)),
        "stop_reason": out.stop_reason,
        "mode": mode,
        "duration_s": round(out.elapsed_s, 3),
        "peak_force_n": round(out.peak_force_n, 2),
        **(extra or {}),
    }
    if len(plans) == 1:
        value.update(next(iter(per_arm.values())))
    else:
        value["arms"] = per_arm
    parts = [f"{name} {value['arm']}: {out.stop_reason}"]
    for a, v in per_arm.items():
        tag = f"{a} " if len(per_arm) > 1 else ""
        x, y, z = v["tcp_position_m"]
        parts.append(
            f"{tag}moved {v['executed_distance_m']:.3f}/{v['planned_distance_m']:.3f} m, "
            f"jaw {v['jaw_before_m']:.3f}->{v['jaw_after_m']:.3f} m, tcp ({x:.3f},{y:.3f},{z:.3f})"
        )
    parts.append(f"peak {out.peak_force_n:.1f} N, {out.elapsed_s:.2f} s")
    receipt = "; ".join(parts)
    diag = {"trace": {a: trace(out.samples[a]) for a in plans}}
    if out.stop_reason == "reached":
        return Result.ok(
            f"{name} reached the target", value, executed=True, receipt=receipt, diagnostics=diag
        )
    if out.stop_reason == "estop":
        why = f" ({out.detail})" if out.detail else ""
        return Result.fail(
            FailureCategory.ESTOP,
            f"the e-stop was latched during the motion{why}; the "
            "robot halted and an operator must reset it",
            executed=True,
            value=value,
            receipt=receipt,
            diagnostics=diag,
        )
    if out.stop_reason == "deadline":
        return Result.fail(
            FailureCategory.TIMEOUT,
            f"{deadline.what() or 'the deadline'} passed during the motion; the robot holds "
            "where it stopped",
            executed=True,
            value=value,
            receipt=receipt,
            diagnostics=diag,
        )
    if out.stop_reason == "contact":
        return Result.fail(
            FailureCategory.CONTACT,
            f"stopped at first contact ({out.peak_force_n:.1f} N > {CONTACT_FORCE_N:.0f} N guard "
            "or the manipulation limit); inspect, then recover() or re-plan",
            executed=True,
            value=value,
            receipt=receipt,
            diagnostics=diag,
        )
    return Result.fail(
        FailureCategory.FORCE_LIMIT,
        f"emergency force limit ({EMERGENCY_FORCE_N:.0f} N) tripped; back out with recover()",
        executed=True,
        value=value,
        receipt=receipt,
        diagnostics=diag,
    )
