"""The physical verifier: accept or reject one dispatched transaction from measured quantities.

``E_t = Verify(s_t, Pi_t, s_t^+)``. Checks, each with its measured value and limit:

* payload support and stability: no drop (floor contact, lowest point), both robots' palms loaded
  (carrying phases) or none (after release), formation spacing and facing within the cradle's
  tolerance, tilt over the transaction and at its end;
* robot state: upright (torso tilt), no fall;
* environmental contacts: robots or payload against walls or pedestals (the payload may touch the
  start pedestal before lift-off and the target pedestal from placement on);
* phase validity: the primitive, its objective and the state fit the active phase;
* progress against the committed objective (along-route progress to a gate, heading error and
  position after a turn, lateral offset, formation error, target distance, placement, release,
  retreat clearance).

An accepted transition becomes the next trusted checkpoint. Setup and corrective actions (e.g.
alignment) are accepted without completing a phase; phase completion and milestones are certified
separately. The structured evidence (:mod:`captain_ros.research.coevolve.evidence`) goes back into
the next prompt.
"""

from __future__ import annotations

import math
from typing import Any

from captain_ros.backends.humanoid.layouts import Layout
from captain_ros.research.coevolve.evidence import LEVELS, Check, Evidence, Tolerances  # noqa: F401
from captain_ros.research.coevolve.motor import DROP_LOWEST_Z_M, ExecutionTrace
from captain_ros.research.coevolve.observation import Observation
from captain_ros.research.coevolve.plan import Phase
from captain_ros.research.coevolve.progress import progress
from captain_ros.research.coevolve.strategy import ROBOTS, Coordination

PHASE_PRIMITIVES = {
    "initialize": ("initialization",),
    "traverse": ("coordinated_linear_transport", "coordinated_pivot", "coordinated_alignment"),
    "enter_target": ("coordinated_linear_transport", "coordinated_pivot", "coordinated_alignment"),
    "place": ("placement", "coordinated_alignment", "coordinated_linear_transport"),
    "release": ("release",),
    "retreat": ("retreat",),
}
PHASE_OBJECTIVES = {
    "initialize": ("initialize",),
    "traverse": ("reach_gate", "turn", "recentre", "restore_spacing"),
    "enter_target": ("enter_target", "turn", "recentre", "restore_spacing", "reach_gate"),
    "place": ("place", "enter_target", "recentre", "restore_spacing"),
    "release": ("release",),
    "retreat": ("retreat",),
}
SETUP_OBJECTIVES = ("recentre", "restore_spacing", "turn")


class Verifier:
    """Verifies transactions for one layout and endpoint."""

    def __init__(
        self, layout: Layout, endpoint: str = "full", tol: Tolerances | None = None
    ) -> None:
        self.layout = layout
        self.endpoint = endpoint
        self.tol = tol or Tolerances()

    # --- the check ------------------------------------------------------------------------------
    def verify(
        self,
        pre: Observation,
        z: Coordination,
        theta: dict[str, dict[str, Any]],
        post: Observation,
        trace: ExecutionTrace,
        phase: Phase,
        certified: tuple[str, ...],
    ) -> Evidence:
        tol, kind = self.tol, phase.kind
        checks: list[Check] = []
        mon = trace.monitor or {}
        pay = post.payload
        carrying = kind in ("initialize", "traverse", "enter_target") or (
            kind == "place" and z.primitive != "placement"
        )
        after_release = kind in ("retreat",) or z.primitive == "release"
        # payload support and stability
        low = float(mon.get("min_payload_lowest_z_m", pay["lowest_z_m"]))
        dropped = (
            "floor" in pay["touches"] or low < DROP_LOWEST_Z_M or trace.reason == "payload dropped"
        )
        checks.append(
            Check(
                "payload_not_dropped",
                not dropped,
                "drop",
                round(low, 3),
                DROP_LOWEST_Z_M,
                "payload touched the floor" if "floor" in pay["touches"] else "",
            )
        )
        forces = {r: post["robots"][r]["palm_force_n"] for r in ROBOTS}
        if carrying or z.primitive == "placement":
            weak = [r for r in ROBOTS if forces[r] < tol.support_force_n]
            if z.primitive == "placement":
                weak = [] if pay["resting_on"] == "target_support" else weak
            checks.append(
                Check(
                    "payload_supported",
                    not weak,
                    "support",
                    forces,
                    tol.support_force_n,
                    f"no palm support from {', '.join(weak)}" if weak else "",
                )
            )
        if after_release:
            touching = [r for r in ROBOTS if forces[r] > 0.5]
            checks.append(
                Check(
                    "palms_clear",
                    not touching,
                    "support",
                    forces,
                    0.5,
                    f"{', '.join(touching)} still touch the payload" if touching else "",
                )
            )
        if carrying:
            f = post.formation
            se = f["spacing_error_m"]
            checks.append(
                Check(
                    "formation_spacing",
                    abs(se) <= tol.spacing_tol_m,
                    "support",
                    round(se, 3),
                    tol.spacing_tol_m,
                    ("robots separated" if se > 0 else "robots compressed")
                    if abs(se) > tol.spacing_tol_m
                    else "",
                )
            )
            checks.append(
                Check(
                    "formation_facing",
                    f["max_facing_error_rad"] <= tol.facing_tol_rad,
                    "support",
                    round(f["max_facing_error_rad"], 3),
                    tol.facing_tol_rad,
                )
            )
            tmax = float(mon.get("max_payload_tilt_rad", pay["tilt_rad"]))
            checks.append(
                Check(
                    "payload_tilt_during",
                    tmax <= tol.carry_tilt_rad,
                    "stability",
                    round(math.degrees(tmax), 1),
                    round(math.degrees(tol.carry_tilt_rad), 1),
                    "degrees",
                )
            )
            checks.append(
                Check(
                    "payload_tilt_final",
                    pay["tilt_rad"] <= tol.final_tilt_rad,
                    "stability",
                    round(math.degrees(pay["tilt_rad"]), 1),
                    round(math.degrees(tol.final_tilt_rad), 1),
                    "degrees",
                )
            )
        # robot state
        rtilt = mon.get("max_robot_tilt_rad") or {r: post["robots"][r]["tilt_rad"] for r in ROBOTS}
        fallen = [r for r in ROBOTS if post["robots"][r]["fallen"]]
        worst = max(ROBOTS, key=lambda r: rtilt.get(r, 0.0))
        checks.append(
            Check(
                "robots_upright",
                not fallen and rtilt.get(worst, 0.0) <= tol.robot_tilt_rad,
                "robot",
                {r: round(float(v), 3) for r, v in rtilt.items()},
                tol.robot_tilt_rad,
                f"{worst} tilted" + (" and fell" if fallen else ""),
            )
        )
        # environmental contacts
        allowed = {"payload|start_support"} if kind == "initialize" else set()
        if kind in ("place", "release", "retreat") or z.primitive in ("placement", "release"):
            allowed.add("payload|target_support")
        seen = [
            c
            for c in mon.get("environment_contacts", post["environment_contacts"])
            if "floor" not in c and c not in allowed
        ]
        checks.append(Check("environment_contacts", not seen, "contact", seen, [], "; ".join(seen)))
        # phase validity
        pre_ok, why = self._phase_valid(pre, z, phase)
        checks.append(Check("phase_validity", pre_ok, "phase", z.primitive, phase.kind, why))
        # progress against the objective
        prog_ok, prog_detail, meas = progress(self.layout, self.tol, pre, z, theta, post, trace)
        checks.append(
            Check(
                "progress",
                prog_ok,
                "progress",
                meas.get("progress"),
                meas.get("needed"),
                prog_detail,
            )
        )
        failed = [c for c in checks if not c.ok]
        failed.sort(key=lambda c: LEVELS.index(c.level))
        meas.update(
            {
                "payload_xy": [round(float(v), 3) for v in post.payload["position_m"][:2]],
                "clipped_commands": trace.clipped,
                "watchdog_expired": list(trace.watchdog),
                "duration_s": round(trace.duration_s, 2),
                "stopped": trace.reason,
                "spacing_error_m": post.formation["spacing_error_m"],
                "lateral_m": post.route["centre_lateral_m"],
                "heading_error_rad": post.route["heading_error_rad"],
            }
        )
        expired = "".join(f"; {r} velocity command expired (watchdog)" for r in trace.watchdog)
        if failed:
            first = failed[0]
            ftype, culprit = self._classify(first, z, trace)
            summary = (
                f"REJECTED ({first.level}): {first.name} failed"
                + (f" - {first.detail}" if first.detail else "")
                + (
                    f" [value {first.value}, limit {first.limit}]"
                    if first.value is not None
                    else ""
                )
                + "".join(
                    f"; {r} commands clipped: {', '.join(c)}" for r, c in trace.clipped.items() if c
                )
                + expired
            )
            return Evidence(
                False, tuple(checks), ftype, first.level, culprit, summary, measurements=meas
            )
        done, cert = self._completion(pre, z, post, trace, phase, certified, meas)
        setup = not done
        summary = (
            "ACCEPTED"
            + (
                f"; completed {', '.join(done)}"
                if done
                else " (setup/corrective; no phase completed)"
            )
            + (f"; certified {', '.join(cert)}" if cert else "")
            + expired
        )
        return Evidence(
            True,
            tuple(checks),
            summary=summary,
            completed_phases=tuple(done),
            certified=tuple(cert),
            setup_only=setup,
            measurements=meas,
        )

    def _phase_valid(self, pre: Observation, z: Coordination, phase: Phase) -> tuple[bool, str]:
        if z.primitive not in PHASE_PRIMITIVES[phase.kind]:
            return False, f"{z.primitive} is not valid in phase {phase.name}"
        if z.objective.kind not in PHASE_OBJECTIVES[phase.kind]:
            return False, f"objective {z.objective.kind} does not serve phase {phase.name}"
        if z.primitive == "placement" and pre["target"]["distance_m"] > self.tol.target_radius_m:
            return False, (
                f"placement with the payload {pre['target']['distance_m']:.2f} m from the target "
                f"(radius {self.tol.target_radius_m} m)"
            )
        if z.primitive == "release" and pre.payload["resting_on"] != "target_support":
            return False, "release while the payload does not rest on the target pedestal"
        if z.primitive == "retreat" and any(pre["robots"][r]["palm_force_n"] > 0.5 for r in ROBOTS):
            return False, "retreat before the palms are clear of the payload"
        return True, ""

    def _classify(self, c: Check, z: Coordination, trace: ExecutionTrace) -> tuple[str, str]:
        def role(r: str) -> str:
            return f"{r} ({z.role_of(r)})"

        clipped = [r for r, v in trace.clipped.items() if v]
        if c.name == "payload_not_dropped":
            return "payload_drop", role(clipped[0]) if clipped else "payload"
        if c.name == "robots_upright":
            r = c.detail.split()[0]
            return ("robot_fall" if "fell" in c.detail else "robot_tilt"), role(r)
        if c.name == "environment_contacts":
            first = c.value[0] if c.value else ""
            who = next(
                (p.split(".")[0] for p in first.split("|") if p.startswith("robot_")), "payload"
            )
            kind = "pedestal_contact" if "support" in first else "wall_contact"
            return kind, role(who) if who.startswith("robot_") else who
        if c.name == "payload_supported":
            weak = [r for r in ROBOTS if c.value[r] < self.tol.support_force_n]
            return "support_lost", role(weak[0]) if weak else ""
        if c.name == "formation_spacing":
            return "spacing_out_of_tolerance", "separated" if (c.value or 0) > 0 else "compressed"
        if c.name == "formation_facing":
            return "facing_error", ""
        if c.name.startswith("payload_tilt"):
            return "payload_tilt", role(clipped[0]) if clipped else "payload"
        if c.name == "palms_clear":
            return "palms_not_clear", ""
        if c.name == "phase_validity":
            return "phase_invalid", z.primitive
        return "no_progress", z.objective.kind

    def _completion(
        self,
        pre: Observation,
        z: Coordination,
        post: Observation,
        trace: ExecutionTrace,
        phase: Phase,
        certified: tuple[str, ...],
        meas: dict[str, Any],
    ) -> tuple[list[str], list[str]]:
        lay, tol = self.layout, self.tol
        done: list[str] = []
        cert: list[str] = []
        have = set(certified)
        p = post.payload
        level = p["tilt_rad"] <= math.radians(12.0)
        supported = p["supported"] and level
        s, lat = post.route["s_m"], post.route["lateral_m"]
        for g in lay.gates:
            if g.name in have:
                continue
            if supported and s >= g.s_m and abs(lat) <= lay.width_m / 2.0:
                cert.append(g.name)
                have.add(g.name)
            else:
                break
        gates_done = all(g.name in have for g in lay.gates)
        if (
            gates_done
            and "target_region" not in have
            and post["target"]["distance_m"] <= tol.target_radius_m
            and (supported or p["resting_on"] == "target_support")
        ):
            cert.append("target_region")
            have.add("target_region")
        kind = phase.kind
        if kind == "initialize" and z.objective.kind == "initialize":
            done.append(phase.name)
        if kind == "place" and z.primitive == "placement":
            done.append(phase.name)
        if kind == "release" and z.primitive == "release":
            done.append(phase.name)
            if self.endpoint == "placement":
                cert.append("terminal")
        if kind == "retreat" and z.primitive == "retreat":
            done.append(phase.name)
            cert.append("terminal")
        done += [f"traverse_{m}" for m in cert if m.startswith("gate")]
        if "target_region" in cert:
            done.append("enter_target")
        return done, cert
