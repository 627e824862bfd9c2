"""Scripted Orchestrator, Coder and Reviser: honest rule-based baselines for tests and ablations.

They see exactly what a model role sees (the observation, plan, retrieved memory, evidence,
constraints) and are held to the same host checks. Their first guesses come from *coarse rules*
(fixed step lengths and speeds, a fixed pivot stand-off and turn rate, alignment only past fixed
thresholds) that are sometimes wrong for the physics: a quarter turn at the default rate asks the
outer robot for more than the controller's lateral limit; long steps let tracking errors open the
cradle. The verifier's evidence then drives a typed revision (which field to change follows from
the failure type and the clipped commands it reports), and memory carries accepted numbers and
principles to later corners and later runs. Without a reviser (flat reflective repair) they fall
back on an untargeted reflection: shorten the step, then slow down, then try another primitive.
The typed Reviser is in :mod:`captain_ros.research.coevolve.roles.scripted_reviser`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from captain_ros.backends.humanoid.sim import SPACING_M
from captain_ros.backends.humanoid.types import BaseLimits, wrap_angle
from captain_ros.research.coevolve.memory import ActionExemplar
from captain_ros.research.coevolve.roles.base import ProgramPair, RoleContext, RoleOutput
from captain_ros.research.coevolve.strategy import ROBOTS, Coordination, Objective

STEP_M = 1.5
SPEED_M_S = 0.3
PIVOT_RATE_RAD_S = 0.35
PIVOT_STANDOFF_M = 0.6
SPACING_TRIGGER_M = 0.05
FACING_TRIGGER_RAD = 0.12
RECENTRE_TRIGGER_M = 0.15
HEADING_TRIGGER_RAD = 0.12
ALIGN_SPEED_M_S = 0.08
LATERAL_LIMIT_M_S = BaseLimits().lateral_m_s


def turn_side(turn_rad: float) -> str:
    """The robot on the inside of a turn: robot_b is on the left of travel."""
    return "robot_b" if turn_rad > 0 else "robot_a"


def _z(
    primitive: str,
    kind: str,
    target: str = "",
    mode: str = "synchronous",
    roles: tuple[str, str] = ("peer", "peer"),
    intent: str = "",
    evidence: str = "",
) -> Coordination:
    return Coordination(
        primitive, Objective(kind, target), mode, roles, intent=intent, evidence=evidence
    )


def _pivot_roles(rule: str, turn_rad: float) -> tuple[str, tuple[str, str]]:
    if rule == "co_rotate":
        return "synchronous", ("co_rotator", "co_rotator")
    inner = turn_side(turn_rad)
    if rule == "inner=far_side":
        inner = "robot_a" if inner == "robot_b" else "robot_b"
    return "asymmetric", ("inner_support", "outer_mover") if inner == "robot_a" else (
        "outer_mover",
        "inner_support",
    )


class ScriptedOrchestrator:
    """Commits ``z`` from the phase, the route references and the formation state (coarse rules)."""

    def commit(self, ctx: RoleContext) -> RoleOutput[Coordination]:
        if ctx.constraint is not None and ctx.constraint.scope in (
            "strategy",
            "coordination",
            "parameter",
        ):
            return RoleOutput(
                ctx.constraint.child.z, meta={"rule": f"approved {ctx.constraint.scope} child"}
            )
        z, rule = self._decide(ctx)
        return RoleOutput(z, meta={"rule": rule})

    def _decide(self, ctx: RoleContext) -> tuple[Coordination, str]:
        kind = ctx.phase.kind
        o = ctx.observation
        if kind == "initialize":
            return _z("initialization", "initialize", evidence=ctx.phase.evidence), "lifecycle"
        if kind == "release":
            return _z("release", "release"), "lifecycle"
        if kind == "retreat":
            return _z("retreat", "retreat"), "lifecycle"
        f, r = o.formation, o.route
        flat_skip = ctx.attempt >= 3 and ctx.constraint is None and ctx.reflection
        if kind == "place":
            if o["target"]["distance_m"] > 0.10:
                return _z("coordinated_linear_transport", "enter_target"), "close in on target"
            return _z("placement", "place"), "lifecycle"
        # traverse / enter_target
        if (
            abs(f["spacing_error_m"]) > SPACING_TRIGGER_M
            or f["max_facing_error_rad"] > FACING_TRIGGER_RAD
        ) and not flat_skip:
            return self._align(ctx), "formation error past threshold"
        corner = r["next_corner"]
        if corner is not None:
            err = wrap_angle(corner["next_heading_rad"] - f["travel_heading_rad"])
            if abs(err) > 0.5 and corner["remaining_m"] <= PIVOT_STANDOFF_M + 0.08:
                rule = self._pivot_rule(ctx)
                mode, roles = _pivot_roles(rule, err)
                return _z(
                    "coordinated_pivot",
                    "turn",
                    f"segment_{corner['index'] + 1}",
                    mode,
                    roles,
                    intent=f"turn into the next segment ({rule})",
                ), f"corner: pivot ({rule})"
        if abs(r["centre_lateral_m"]) > RECENTRE_TRIGGER_M:
            return _z(
                "coordinated_linear_transport", "recentre", f"segment_{r['segment']}"
            ), "off centre"
        if HEADING_TRIGGER_RAD < abs(r["heading_error_rad"]) < 0.5:
            return _z(
                "coordinated_pivot",
                "turn",
                f"segment_{r['segment']}",
                "synchronous",
                ("co_rotator", "co_rotator"),
            ), "heading drift"
        gate = r["next_gate"]
        if gate is None or kind == "enter_target":
            return _z("coordinated_linear_transport", "enter_target", "target"), "approach target"
        return _z("coordinated_linear_transport", "reach_gate", gate["name"]), "advance to gate"

    def _align(self, ctx: RoleContext) -> Coordination:
        rule = "corrector=any"
        for rec in ctx.strategy_records:
            if rec.polarity == "positive" and rec.primitive == "coordinated_alignment":
                rule = rec.role_rule
                break
        return _z(
            "coordinated_alignment",
            "restore_spacing",
            "formation",
            "asymmetric",
            ("reference", "corrector"),
            intent=f"restore the cradle ({rule})",
        )

    def _pivot_rule(self, ctx: RoleContext) -> str:
        """``inner=turn_side`` unless a positive strategy record says otherwise and no
        counterexample contradicts it."""
        coordination_failures = {"wall_contact", "no_progress", "pedestal_contact"}
        bad = {
            r.role_rule
            for r in ctx.strategy_records
            if r.polarity == "counterexample"
            and r.primitive == "coordinated_pivot"
            and coordination_failures & set(r.failure_context)
        }
        for rec in ctx.strategy_records:
            if (
                rec.polarity == "positive"
                and rec.primitive == "coordinated_pivot"
                and rec.role_rule not in bad
            ):
                return rec.role_rule
        return "inner=turn_side" if "inner=turn_side" not in bad else "co_rotate"


def _exemplar_speed(exs: tuple[ActionExemplar, ...], key: str) -> float | None:
    for e in exs:
        v = e.params.get("robot_a", {}).get(key)
        if isinstance(v, (int, float)):
            return float(v)
    return None


def _fmt(v: Any) -> str:
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return f"{float(v):.4f}".rstrip("0").rstrip(".") if float(v) != 0 else "0.0"


def program(robot: str, skill: str, args: dict[str, Any]) -> str:
    """Source of one robot policy: one action call, then stop."""
    kw = ", ".join(f"{k}={_fmt(v)}" for k, v in args.items())
    return f"{robot}.{skill}({kw})\n{robot}.stop()\n"


class ScriptedCoder:
    """Implements ``z`` with numbers from the geometry, coarse defaults and retrieved exemplars."""

    def implement(self, ctx: RoleContext) -> RoleOutput[ProgramPair]:
        z = ctx.z
        assert z is not None
        if (
            ctx.constraint is not None
            and ctx.constraint.scope == "parameter"
            and ctx.constraint.child.theta
        ):
            theta = ctx.constraint.child.theta
            note = "theta from the approved parameter revision"
        else:
            theta, note = self._theta(ctx, z)
        return RoleOutput(
            ProgramPair({r: program(r, z.primitive, theta[r]) for r in ROBOTS}, note),
            meta={"theta": theta},
        )

    def _theta(self, ctx: RoleContext, z: Coordination) -> tuple[dict[str, dict[str, Any]], str]:
        o = ctx.observation
        f, r = o.formation, o.route
        caution = ctx.attempt if (ctx.reflection and ctx.constraint is None) else 0
        shrink = 0.5 if caution >= 1 else 1.0
        slow = 0.7 if caution >= 2 else 1.0
        p = z.primitive
        if p == "initialization":
            return {rb: {} for rb in ROBOTS}, "lifecycle"
        if p == "coordinated_linear_transport":
            speed = (_exemplar_speed(ctx.exemplars, "speed_m_s") or SPEED_M_S) * slow
            tangent = np.array(
                [math.cos(r["segment_heading_rad"]), math.sin(r["segment_heading_rad"])]
            )
            if z.objective.kind == "recentre":
                normal = np.array([-tangent[1], tangent[0]])
                lat = r["centre_lateral_m"]
                d = (-normal if lat > 0 else normal).tolist()
                dist = max(0.05, min(1.5, abs(lat)))
                speed = min(speed, 0.15)
            else:
                d = tangent.tolist()
                if z.objective.kind == "enter_target" and ctx.phase.kind == "place":
                    off = np.array(o["target"]["offset_xy_m"])
                    dist = float(np.linalg.norm(off))
                    d = (off / max(dist, 1e-9)).tolist()
                elif z.objective.kind == "enter_target":
                    dist = r["remaining_to_target_m"]
                else:
                    dist = r["next_gate"]["remaining_m"] + 0.25 if r["next_gate"] else STEP_M
                corner = r["next_corner"]
                if corner is not None and corner["remaining_m"] - PIVOT_STANDOFF_M > 0.04:
                    err = wrap_angle(corner["next_heading_rad"] - f["travel_heading_rad"])
                    if abs(err) > 0.5:
                        dist = min(dist, corner["remaining_m"] - PIVOT_STANDOFF_M)
                dist = max(0.05, min(STEP_M * shrink, dist))
            args = {
                "direction_xy": [round(x, 4) for x in d],
                "distance_m": round(dist, 3),
                "speed_m_s": round(min(0.3, max(0.05, speed)), 3),
            }
            return {rb: dict(args) for rb in ROBOTS}, "geometry + coarse step/speed"
        if p == "coordinated_pivot":
            k = (
                int(z.objective.target.split("_")[-1])
                if z.objective.target.startswith("segment_")
                else r["segment"] + 1
            )
            headings = r["segment_headings_rad"]
            heading = headings[min(max(k, 0), len(headings) - 1)]
            angle = wrap_angle(heading - f["travel_heading_rad"]) * shrink
            rate = (
                _exemplar_speed(ctx.exemplars, "angular_speed_rad_s") or PIVOT_RATE_RAD_S
            ) * slow
            angle = max(-1.75, min(1.75, angle))
            out = {
                rb: {
                    "role": z.role_of(rb),
                    "angle_rad": round(angle, 4),
                    "angular_speed_rad_s": round(min(0.6, max(0.05, rate)), 3),
                }
                for rb in ROBOTS
            }
            return out, "geometry + coarse turn rate"
        if p == "coordinated_alignment":
            return self._alignment(ctx, z, slow), "restore nominal spacing/facing"
        if p == "placement":
            lower = o.payload["lowest_z_m"] - o["target"]["support_top_m"] + 0.05
            args = {
                "lower_m": round(max(0.02, min(0.2, lower)), 3),
                "speed_m_s": round(0.05 * slow, 3),
            }
            return {rb: dict(args) for rb in ROBOTS}, "lower onto the pedestal"
        if p in ("release", "retreat") and ctx.exemplars:
            return {rb: dict(ctx.exemplars[0].params[rb]) for rb in ROBOTS}, "accepted exemplar"
        if p == "release":
            return {rb: {"hold_s": 3.5} for rb in ROBOTS}, "lifecycle"
        if p == "retreat":
            return {
                rb: {"distance_m": round(0.5 * shrink, 3), "speed_m_s": round(0.2 * slow, 3)}
                for rb in ROBOTS
            }, "lifecycle"
        raise ValueError(f"no rule for {p}")

    def _alignment(
        self, ctx: RoleContext, z: Coordination, slow: float
    ) -> dict[str, dict[str, Any]]:
        o = ctx.observation
        ref = next(rb for rb in ROBOTS if z.role_of(rb) == "reference")
        cor = next(rb for rb in ROBOTS if z.role_of(rb) == "corrector")
        yaw_ref = o["robots"][ref]["yaw_rad"]
        ahead = np.array([math.cos(yaw_ref), math.sin(yaw_ref)])  # where the reference faces
        p_ref = np.array([o["robots"][ref]["x_m"], o["robots"][ref]["y_m"]])
        p_cor = np.array([o["robots"][cor]["x_m"], o["robots"][cor]["y_m"]])
        sign = 1.0 if cor == "robot_b" else -1.0
        left = sign * ahead  # robot_a -> robot_b
        want = p_ref + SPACING_M * ahead
        corr = want - p_cor
        n = float(np.linalg.norm(corr))
        if n > 0.2:
            corr = corr * 0.2 / n
        yaw_want = math.atan2(-sign * left[1], -sign * left[0])  # face the reference
        dyaw = max(-0.3, min(0.3, wrap_angle(yaw_want - o["robots"][cor]["yaw_rad"])))
        speed = (_exemplar_speed(ctx.exemplars, "speed_m_s") or ALIGN_SPEED_M_S) * slow
        if n < 1e-3 and abs(dyaw) < 1e-3:
            corr = 0.01 * left * sign
        out = {
            ref: {
                "role": "reference",
                "correction_xy": [0.0, 0.0],
                "yaw_correction_rad": 0.0,
                "speed_m_s": round(min(0.15, max(0.02, speed)), 3),
            },
            cor: {
                "role": "corrector",
                "correction_xy": [round(float(x), 4) for x in corr],
                "yaw_correction_rad": round(dyaw, 4),
                "speed_m_s": round(min(0.15, max(0.02, speed)), 3),
            },
        }
        return out
