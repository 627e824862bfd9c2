"""Serialised measurements and route references: what the roles and the verifier see.

Built from the bridge: robot states (localisation, torso tilt, palm forces) and, in simulation, the
payload pose and contacts from ``privileged_state()`` (on hardware a payload tracker would stand in
for it). Route references for the active segment: its world direction, the next gate, the next
corner and its turn, the corridor half-width and the lateral slack, the target. These are
references, not a waypoint sequence to execute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from captain_ros.backends.humanoid.layouts import Layout
from captain_ros.backends.humanoid.mjcf import PAYLOAD_HALF_M
from captain_ros.backends.humanoid.sim import SPACING_M
from captain_ros.backends.humanoid.types import wrap_angle
from captain_ros.research.coevolve.strategy import ROBOTS

SUPPORT_FORCE_N = 2.0
"""Minimum palm+forearm normal force of a robot that counts as supporting the payload [N]."""
FORMATION_HALF_SPAN_M = SPACING_M / 2.0 + 0.14
"""Half the formation's extent across the corridor (base offset plus torso and feet) [m]."""


@dataclass(frozen=True)
class Observation:
    """One measured scene state. ``data`` is the JSON-ready dictionary given to the roles."""

    data: dict[str, Any]
    digest: str

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @property
    def formation(self) -> dict[str, Any]:
        return self.data["formation"]

    @property
    def route(self) -> dict[str, Any]:
        return self.data["route"]

    @property
    def payload(self) -> dict[str, Any]:
        return self.data["payload"]


def _r(v: Any, nd: int = 3) -> Any:
    if isinstance(v, float):
        return round(v, nd)
    if isinstance(v, (list, tuple)):
        return [_r(x, nd) for x in v]
    if isinstance(v, dict):
        return {k: _r(x, nd) for k, x in v.items()}
    return v


def _twist(payload_axis_xy: list[float], axis_yaw: float) -> float:
    """Yaw of the payload's long axis relative to the formation axis, folded to [-pi/2, pi/2] [rad]."""
    a = math.atan2(payload_axis_xy[1], payload_axis_xy[0]) - axis_yaw
    return (a + math.pi / 2) % math.pi - math.pi / 2


def observe(priv: dict[str, Any], layout: Layout, certified: tuple[str, ...] = ()) -> Observation:
    """Observation of the privileged state ``priv`` given the milestones ``certified`` so far."""
    rb = priv["robots"]
    pa = np.array([rb["robot_a"]["base"]["x_m"], rb["robot_a"]["base"]["y_m"]])
    pb = np.array([rb["robot_b"]["base"]["x_m"], rb["robot_b"]["base"]["y_m"]])
    axis = pb - pa
    spacing = float(np.linalg.norm(axis))
    axis_yaw = math.atan2(axis[1], axis[0])
    travel = wrap_angle(axis_yaw - math.pi / 2)
    facing = {
        "robot_a": wrap_angle(rb["robot_a"]["base"]["yaw_rad"] - axis_yaw),
        "robot_b": wrap_angle(rb["robot_b"]["base"]["yaw_rad"] - axis_yaw - math.pi),
    }
    centre = (pa + pb) / 2.0
    pay = priv["payload"]
    pxy = np.array(pay["position_m"][:2])
    s, lat, seg = layout.project(pxy)
    seg_heading = layout.segment_heading(seg)
    forces = {r: float(sum(priv["palm_force_n"][r])) for r in ROBOTS}
    touches = list(pay["touches"])
    resting = next((t for t in ("floor", "target_support", "start_support") if t in touches), "")
    gates = [g for g in layout.gates if g.name not in certified]
    nxt = gates[0] if gates else None
    corners = layout.corner_s()
    corner_i = next((i for i, cs in enumerate(corners) if cs > s - 0.9), None)
    half_w = layout.width_m / 2.0
    cs_, clat, _ = layout.project(centre)
    target = layout.target_xy
    start_sup, target_sup = layout.supports(0.0)
    data = {
        "time_s": priv["time_s"],
        "robots": {
            r: {
                "x_m": rb[r]["base"]["x_m"],
                "y_m": rb[r]["base"]["y_m"],
                "yaw_rad": rb[r]["base"]["yaw_rad"],
                "tilt_rad": rb[r]["tilt_rad"],
                "height_offset_m": rb[r]["height_offset_m"],
                "palm_force_n": forces[r],
                "fallen": bool(rb[r]["fallen"]),
            }
            for r in ROBOTS
        },
        "payload": {
            "position_m": pay["position_m"],
            "tilt_rad": pay["tilt_rad"],
            "twist_rad": _twist(pay["axis_xy"], axis_yaw),
            "offset_along_axis_m": float(np.dot(pxy - centre, axis / max(spacing, 1e-9))),
            "lowest_z_m": pay["lowest_z_m"],
            "touches": touches,
            "resting_on": resting,
            "supported": all(f >= SUPPORT_FORCE_N for f in forces.values()),
            "supported_by": [r for r in ROBOTS if forces[r] >= SUPPORT_FORCE_N],
        },
        "formation": {
            "centre_xy": centre.tolist(),
            "spacing_m": spacing,
            "spacing_error_m": spacing - SPACING_M,
            "axis_yaw_rad": axis_yaw,
            "travel_heading_rad": travel,
            "facing_error_rad": facing,
            "max_facing_error_rad": max(abs(v) for v in facing.values()),
            "robot_on_left_of_travel": "robot_b",
        },
        "layout": layout.name,
        "route": {
            "s_m": s,
            "segment_headings_rad": [layout.segment_heading(k) for k in range(layout.n_segments)],
            "length_m": layout.length_m,
            "lateral_m": lat,
            "centre_lateral_m": clat,
            "segment": seg,
            "segment_heading_rad": seg_heading,
            "heading_error_rad": wrap_angle(travel - seg_heading),
            "corridor_half_width_m": half_w,
            "lateral_slack_m": half_w - abs(clat) - FORMATION_HALF_SPAN_M,
            "next_gate": None
            if nxt is None
            else {
                "name": nxt.name,
                "s_m": nxt.s_m,
                "remaining_m": nxt.s_m - s,
                "point_xy": layout.point_at(nxt.s_m).tolist(),
            },
            "next_corner": None
            if corner_i is None
            else {
                "index": corner_i,
                "s_m": corners[corner_i],
                "remaining_m": corners[corner_i] - s,
                "point_xy": layout.point_at(corners[corner_i]).tolist(),
                "turn_rad": layout.turn_at_corner(corner_i),
                "next_heading_rad": layout.segment_heading(corner_i + 1),
            },
            "remaining_to_target_m": layout.length_m - s,
            "centre_s_m": cs_,
        },
        "target": {
            "xy": target.tolist(),
            "distance_m": float(np.linalg.norm(pxy - target)),
            "offset_xy_m": (target - pxy).tolist(),
            "support_top_m": target_sup.top_z_m,
            "payload_target_z_m": target_sup.top_z_m + PAYLOAD_HALF_M[2],
        },
        "start_support_xy": [start_sup.x_m, start_sup.y_m],
        "environment_contacts": list(priv["environment_contacts"]),
    }
    return Observation(_r(data), str(priv.get("digest", "")))
