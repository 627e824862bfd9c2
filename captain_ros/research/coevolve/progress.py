"""Progress measures of the verifier: did a transaction advance its committed objective?

One measure per objective kind: along-route progress towards a gate (relative to the commanded
distance), target distance, heading error and distance to the next segment after a turn (relative
to the commanded angle), lateral offset, formation error, placement on the target, the release
stability window, the retreat clearance.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from captain_ros.backends.humanoid.layouts import Layout
from captain_ros.backends.humanoid.sim import SPACING_M, START_SUPPORT_TOP_M
from captain_ros.backends.humanoid.types import wrap_angle
from captain_ros.research.coevolve.motor import ExecutionTrace
from captain_ros.research.coevolve.observation import Observation
from captain_ros.research.coevolve.strategy import ROBOTS, Coordination


def segment_distance(layout: Layout, k: int, xy: np.ndarray) -> float:
    """Distance from ``xy`` to route segment ``k`` (as a line segment) [m]."""
    a = np.asarray(layout.waypoints[k], float)
    b = np.asarray(layout.waypoints[k + 1], float)
    t = float(np.clip((xy - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0))
    return float(np.linalg.norm(xy - (a + t * (b - a))))


def formation_error(o: Observation) -> float:
    """Spacing error plus half the worst facing error (a cradle-distortion measure)."""
    f = o.formation
    return abs(f["spacing_error_m"]) + 0.5 * f["max_facing_error_rad"]


def on_target(tol: Any, o: Observation) -> tuple[bool, dict[str, float]]:
    """Whether the payload rests on the target within the tolerances, and the measured errors."""
    p = o.payload
    dz = abs(p["position_m"][2] - o["target"]["payload_target_z_m"])
    dxy = o["target"]["distance_m"]
    ok = (
        p["resting_on"] == "target_support"
        and dxy <= tol.target_radius_m
        and dz <= tol.vertical_tol_m
        and p["tilt_rad"] <= tol.terminal_tilt_rad
    )
    return ok, {"target_distance_m": dxy, "target_dz_m": dz, "tilt_rad": p["tilt_rad"]}


def clearance(o: Observation) -> float:
    """Smallest robot-to-payload base distance beyond the carrying distance [m]."""
    c = np.array(o.payload["position_m"][:2])
    return (
        min(
            float(np.linalg.norm(np.array([o["robots"][r]["x_m"], o["robots"][r]["y_m"]]) - c))
            for r in ROBOTS
        )
        - SPACING_M / 2.0
    )


def progress(
    layout: Layout,
    tol: Any,
    pre: Observation,
    z: Coordination,
    theta: dict[str, dict[str, Any]],
    post: Observation,
    trace: ExecutionTrace,
) -> tuple[bool, str, dict[str, Any]]:
    """Whether the transaction progressed towards ``z.objective``: ``(ok, detail, measurements)``."""
    kind = z.objective.kind
    lay = layout
    if kind == "initialize":
        lifted = post.payload["lowest_z_m"] - START_SUPPORT_TOP_M
        ok = (
            post.payload["supported"]
            and "start_support" not in post.payload["touches"]
            and lifted >= 0.015
            and post.payload["tilt_rad"] <= math.radians(5.0)
        )
        return ok, f"payload lifted {lifted:.3f} m", {"progress": round(lifted, 3), "needed": 0.015}
    if kind in ("reach_gate", "enter_target"):
        a = theta["robot_a"]
        tangent = lay.tangent_at(pre.route["s_m"])
        along = 0.0
        if z.primitive == "coordinated_linear_transport":
            along = float(a["distance_m"]) * float(np.dot(a["direction_xy"], tangent))
        if kind == "reach_gate":
            ds = post.route["s_m"] - pre.route["s_m"]
            remaining = pre.route["next_gate"]["remaining_m"] if pre.route["next_gate"] else along
            need = max(0.05, 0.5 * min(along, max(remaining, 0.05))) if along > 0 else math.inf
            ok = ds >= need
            return (
                ok,
                (
                    f"advanced {ds:.2f} m along the route (commanded {along:.2f} m)"
                    if ok
                    else f"advanced only {ds:.2f} m along the route (needed {need:.2f} m)"
                ),
                {
                    "progress": round(ds, 3),
                    "needed": round(need, 3) if math.isfinite(need) else None,
                },
            )
        d0, d1 = pre["target"]["distance_m"], post["target"]["distance_m"]
        need_d = max(tol.target_radius_m, d0 - 0.5 * min(max(along, 0.0), d0))
        ok = d1 <= need_d + 1e-9 and d1 < d0
        return (
            ok,
            f"target distance {d0:.2f} -> {d1:.2f} m",
            {"progress": round(d0 - d1, 3), "needed": round(d0 - need_d, 3)},
        )
    if kind == "turn":
        k = (
            int(z.objective.target.split("_")[-1])
            if z.objective.target.startswith("segment_")
            else min(pre.route["segment"] + 1, lay.n_segments - 1)
        )
        h = lay.segment_heading(k)
        e0 = abs(wrap_angle(pre.formation["travel_heading_rad"] - h))
        e1 = abs(wrap_angle(post.formation["travel_heading_rad"] - h))
        c0 = segment_distance(lay, k, np.array(pre.payload["position_m"][:2]))
        c1 = segment_distance(lay, k, np.array(post.payload["position_m"][:2]))
        commanded = abs(float(theta["robot_a"].get("angle_rad", e0)))
        need = min(0.5 * min(commanded, e0), max(e0 - 0.15, 0.0))
        ok = e0 > 0.05 and e0 - e1 >= need and c1 <= c0 + 0.25
        detail = (
            f"heading error to segment {k} {math.degrees(e0):.0f} -> {math.degrees(e1):.0f} deg; "
            f"distance to segment {k} {c0:.2f} -> {c1:.2f} m"
        )
        if c1 > c0 + 0.25:
            detail += " (the formation moved away from the next segment)"
        if e0 <= 0.05:
            detail += " (the heading was already aligned: nothing to turn)"
        return (
            ok,
            detail,
            {
                "progress": round(e0 - e1, 3),
                "needed": round(need, 3),
                "segment_distance_m": [round(c0, 3), round(c1, 3)],
            },
        )
    if kind == "recentre":
        l0, l1 = abs(pre.route["centre_lateral_m"]), abs(post.route["centre_lateral_m"])
        ok = l0 > 0.03 and l1 <= max(0.06, 0.6 * l0)
        return (
            ok,
            f"lateral offset {l0:.3f} -> {l1:.3f} m",
            {"progress": round(l0 - l1, 3), "needed": round(l0 - max(0.06, 0.6 * l0), 3)},
        )
    if kind == "restore_spacing":
        e0, e1 = formation_error(pre), formation_error(post)
        ok = e0 > 0.015 and e1 <= max(0.03, 0.6 * e0)
        return (
            ok,
            f"formation error {e0:.3f} -> {e1:.3f}",
            {"progress": round(e0 - e1, 3), "needed": round(e0 - max(0.03, 0.6 * e0), 3)},
        )
    if kind == "place":
        ok, m = on_target(tol, post)
        return (
            ok,
            (
                f"payload {'rests' if ok else 'does not rest'} on the target (distance "
                f"{m['target_distance_m']:.2f} m, dz {m['target_dz_m']:.3f} m)"
            ),
            {
                "progress": m,
                "needed": {"radius_m": tol.target_radius_m, "dz_m": tol.vertical_tol_m},
            },
        )
    if kind == "release":
        ok_t, m = on_target(tol, post)
        w = trace.window
        wt = float(w.get("max_tilt_rad", math.inf))
        ok = (
            ok_t
            and w.get("duration_s", 0.0) >= tol.window_s - 1e-6
            and wt <= tol.terminal_tilt_rad
            and w.get("max_drift_m", math.inf) <= 0.05
        )
        return (
            ok,
            (
                f"stability window {w.get('duration_s', 0.0):.1f} s, max tilt "
                f"{math.degrees(wt) if math.isfinite(wt) else float('nan'):.1f} deg, drift "
                f"{w.get('max_drift_m', float('nan')):.3f} m; on target {ok_t}"
            ),
            {
                "progress": {"window": {k: v for k, v in w.items() if k != "start"}, **m},
                "needed": {"window_s": tol.window_s},
            },
        )
    if kind == "retreat":
        ok_t, m = on_target(tol, post)
        cl = clearance(post)
        ok = ok_t and cl >= tol.retreat_clearance_m
        return (
            ok,
            f"clearance {cl:.2f} m (payload still on target: {ok_t})",
            {"progress": round(cl, 3), "needed": tol.retreat_clearance_m},
        )
    return False, f"no progress measure for objective {kind}", {}
