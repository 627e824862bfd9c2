"""The scripted Reviser: a typed revision chosen from the verifier's evidence.

The failure type, the culprit's role and the commands the controller clipped select the scope and
the field: a clipped or unstable pivot -> parameter (turn rate below what the outer robot can
walk); a pivot robot against a wall -> coordination (co-rotation, or swap inner and outer); a
formation that opened from an already imperfect state -> strategy (alignment first); a transport
against a wall -> strategy (recentre); otherwise shorter and slower steps. Repeated rejections at one
checkpoint escalate to a strategy change. The host then checks the child against its parent
(:func:`captain_ros.research.coevolve.strategy.check_revision`).
"""

from __future__ import annotations

from typing import Any

from captain_ros.research.coevolve.roles.base import RoleContext, RoleOutput
from captain_ros.research.coevolve.roles.scripted import LATERAL_LIMIT_M_S, _pivot_roles, _z
from captain_ros.research.coevolve.strategy import ROBOTS, Coordination, Revision, Strategy


class ScriptedReviser:
    """Typed revision from the evidence: which scope and field follows from the failure type."""

    def revise(self, ctx: RoleContext) -> RoleOutput[Revision]:
        parent, ev = ctx.parent, ctx.evidence
        assert parent is not None and ev is not None
        z, th = parent.z, parent.theta
        ftype, culprit = ev.failure_type, ev.culprit
        clipped = {r: c for r, c in ev.measurements.get("clipped_commands", {}).items() if c}
        obs = ctx.observation
        if (
            ctx.attempt >= 4
            and z.primitive != "coordinated_alignment"
            and ctx.phase.kind in ("traverse", "enter_target")
        ):
            return self._to(
                z,
                _z(
                    "coordinated_alignment",
                    "restore_spacing",
                    "formation",
                    "asymmetric",
                    ("reference", "corrector"),
                ),
                "repeated rejections at this checkpoint: re-establish the formation first",
                ("primitive:coordinated_alignment",),
            )
        if ftype == "phase_invalid":
            if z.primitive == "placement":
                return self._to(
                    z,
                    _z("coordinated_linear_transport", "enter_target", "target"),
                    "placement needs the payload inside the target radius",
                    ("primitive:coordinated_linear_transport", "objective:enter_target"),
                )
            return RoleOutput(None, error=f"no repair for phase_invalid of {z.primitive}")
        if z.primitive == "coordinated_pivot":
            if clipped or ftype in (
                "payload_drop",
                "payload_tilt",
                "facing_error",
                "spacing_out_of_tolerance",
                "support_lost",
                "robot_tilt",
            ):
                if z.mode == "asymmetric" or clipped:
                    rate = min(
                        float(th["robot_a"]["angular_speed_rad_s"]) * 0.7,
                        0.85 * LATERAL_LIMIT_M_S / max(obs.formation["spacing_m"], 1.0),
                    )
                else:
                    rate = float(th["robot_a"]["angular_speed_rad_s"]) * 0.7
                rate = round(max(0.05, rate), 3)
                child = {r: {**th[r], "angular_speed_rad_s": rate} for r in ROBOTS}
                return self._param(
                    z,
                    child,
                    f"{ftype}; the outer robot's arc speed was clipped"
                    if clipped
                    else f"{ftype} while pivoting: turn slower",
                    ("angular_speed:decrease",),
                )
            if ftype == "wall_contact":
                if "outer_mover" in culprit or "inner_support" in culprit:
                    return self._coord(
                        z,
                        "synchronous",
                        ("co_rotator", "co_rotator"),
                        f"{culprit} hit a wall: co-rotate about the payload centre instead",
                        ("mode:synchronous", "roles:co_rotate"),
                    )
                return self._coord(
                    z,
                    "asymmetric",
                    ("inner_support", "outer_mover"),
                    "co-rotation hit a wall: pivot about one robot",
                    ("mode:asymmetric",),
                )
            if ftype == "no_progress":
                if z.mode == "asymmetric":
                    swapped = (z.roles[1], z.roles[0])
                    return self._coord(
                        z,
                        "asymmetric",
                        swapped,
                        "the formation moved away from the next "
                        "segment: swap inner and outer roles",
                        ("roles:swap",),
                    )
                return self._coord(
                    z,
                    "asymmetric",
                    _pivot_roles("inner=turn_side", float(th["robot_a"]["angle_rad"]))[1],
                    "co-rotation did not bring the formation into the segment",
                    ("mode:asymmetric", "roles:inner_turn_side"),
                )
        if z.primitive in ("coordinated_linear_transport", "retreat"):
            if (
                ftype == "wall_contact"
                and z.primitive == "coordinated_linear_transport"
                and z.objective.kind != "recentre"
            ):
                return self._to(
                    z,
                    _z(
                        "coordinated_linear_transport",
                        "recentre",
                        f"segment_{obs.route['segment']}",
                    ),
                    "wall contact while advancing: recentre in the corridor first",
                    ("objective:recentre",),
                )
            if ftype in ("spacing_out_of_tolerance", "facing_error") and (
                abs(obs.formation["spacing_error_m"]) > 0.025
                or obs.formation["max_facing_error_rad"] > 0.06
            ):
                return self._to(
                    z,
                    _z(
                        "coordinated_alignment",
                        "restore_spacing",
                        "formation",
                        "asymmetric",
                        ("reference", "corrector"),
                    ),
                    "the cradle opened during transport from an already imperfect formation: "
                    "align first",
                    ("primitive:coordinated_alignment", "objective:restore_spacing"),
                )
            child = {r: dict(th[r]) for r in ROBOTS}
            if z.primitive == "retreat" and ftype == "no_progress":
                for r in ROBOTS:
                    child[r]["distance_m"] = round(min(1.0, float(child[r]["distance_m"]) + 0.1), 3)
                return self._param(
                    z,
                    child,
                    "not clear of the payload yet: step further back",
                    ("distance:increase",),
                )
            for r in ROBOTS:
                if "distance_m" in child[r] and ftype not in ("no_progress",):
                    child[r]["distance_m"] = round(
                        max(
                            0.2 if z.primitive == "retreat" else 0.05,
                            float(child[r]["distance_m"]) * 0.6,
                        ),
                        3,
                    )
                child[r]["speed_m_s"] = round(max(0.05, float(child[r]["speed_m_s"]) * 0.75), 3)
            changes = (
                ("distance:decrease", "speed:decrease")
                if ftype != "no_progress"
                else ("speed:decrease",)
            )
            return self._param(z, child, f"{ftype}: shorter and slower steps", changes)
        if z.primitive == "coordinated_alignment" and ctx.attempt >= 3:
            goal = (
                "enter_target"
                if ctx.phase.kind == "enter_target" or obs.route["next_gate"] is None
                else "reach_gate"
            )
            target = "target" if goal == "enter_target" else obs.route["next_gate"]["name"]
            return self._to(
                z,
                _z("coordinated_linear_transport", goal, target),
                "alignment keeps failing here: continue the route with the formation as it is",
                ("primitive:coordinated_linear_transport", f"objective:{goal}"),
            )
        if z.primitive == "coordinated_alignment":
            child = {r: dict(th[r]) for r in ROBOTS}
            for r in ROBOTS:
                child[r]["speed_m_s"] = round(max(0.02, float(child[r]["speed_m_s"]) * 0.6), 3)
            if ftype == "no_progress" or all(th[r]["speed_m_s"] <= 0.021 for r in ROBOTS):
                roles = (z.roles[1], z.roles[0])
                return self._coord(
                    z, "asymmetric", roles, "swap reference and corrector", ("roles:swap",)
                )
            return self._param(z, child, f"{ftype}: slower correction", ("speed:decrease",))
        if (
            z.primitive == "placement"
            and ftype == "pedestal_contact"
            and obs["target"]["distance_m"] > 0.03
        ):
            return self._to(
                z,
                _z("coordinated_linear_transport", "enter_target", "target"),
                "a palm touched the pedestal: centre the payload over the target first",
                ("primitive:coordinated_linear_transport", "objective:enter_target"),
            )
        if z.primitive == "placement":
            child = {
                r: {**th[r], "speed_m_s": round(max(0.02, float(th[r]["speed_m_s"]) * 0.6), 3)}
                for r in ROBOTS
            }
            if ftype == "no_progress":
                child = {
                    r: {**child[r], "lower_m": round(min(0.2, float(th[r]["lower_m"]) + 0.04), 3)}
                    for r in ROBOTS
                }
                return self._param(
                    z, child, "not resting on the pedestal: lower further", ("lower:increase",)
                )
            return self._param(z, child, f"{ftype}: lower more slowly", ("speed:decrease",))
        if z.primitive == "release":
            child = {r: {"hold_s": min(6.0, float(th[r]["hold_s"]) + 1.0)} for r in ROBOTS}
            return self._param(z, child, f"{ftype}: hold longer", ("hold:increase",))
        return RoleOutput(None, error=f"no typed repair for {ftype} of {z.primitive}")

    @staticmethod
    def _param(
        z: Coordination, theta: dict[str, dict[str, Any]], why: str, changes: tuple[str, ...]
    ) -> RoleOutput[Revision]:
        return RoleOutput(Revision("parameter", Strategy(z, theta), why, changes))

    @staticmethod
    def _coord(
        z: Coordination, mode: str, roles: tuple[str, str], why: str, changes: tuple[str, ...]
    ) -> RoleOutput[Revision]:
        child = Coordination(z.primitive, z.objective, mode, roles, intent=why)
        return RoleOutput(Revision("coordination", Strategy(child), why, changes))

    @staticmethod
    def _to(
        parent: Coordination, child: Coordination, why: str, changes: tuple[str, ...]
    ) -> RoleOutput[Revision]:
        from captain_ros.research.coevolve.skills import SKILLS

        if SKILLS[child.primitive].admits(parent.mode, parent.roles):
            child = Coordination(
                child.primitive, child.objective, parent.mode, parent.roles, intent=why
            )
        return RoleOutput(Revision("strategy", Strategy(child), why, changes))
