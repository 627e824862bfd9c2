"""robosuite_nut_assembly_square: the square nut dropped over the square peg.

robosuite's square nut is a square ring (4.55 cm hole) with a handle on one side; the square peg
(3.2 cm) leaves 6.75 mm of play per side when the nut is square to it, less when turned. The
segmenter fits nut and handle as one box; its long axis is the handle's, and the box centre sits
1.8 cm from the ring's centre toward the handle. Which end carries the handle I learn by touch
(:func:`find_nut_centre`): the closed fingers go down through the hole at one candidate centre,
and stop on the ring at the other. Then I grasp the handle across its width, carry the nut above
the peg turned square to it (handle toward my base), lower it guarded, let go and back off
(robosuite also asks the gripper to be clear of the nut), and measure the nut against the peg.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from captain_ros.policy.expert.cells import Call, Notes, Plan
from captain_ros.policy.expert.kit import (
    State,
    approach,
    go,
    holding,
    jaw,
    ok,
    qmul,
    qz,
    ready,
    stop_reason,
    tcp,
    val,
    wrap,
)
from captain_ros.policy.expert.look import find
from captain_ros.policy.expert.routines import finish_with_retries
from captain_ros.policy.expert.source import in_session

GATE_XY_M = 0.02


@in_session
def nut_and_peg(S: State, nut: str = "orange nut", peg: str = "orange peg") -> dict[str, Any]:
    """Measure the nut (as a box: its long axis is the handle's) and the square peg."""
    S.robot.hold(duration_s=1.0)  # robosuite drops the nut from a few cm at reset: let it settle
    o = S.robot.observe()
    H = val(o, "handle")
    S.cams = val(o, "cameras", default=S.cams) or S.cams
    out: dict[str, Any] = {}
    for name, text, shape, pref in (
        ("square_nut", nut, "box", None),
        ("square_peg", peg, "auto", "tallest"),
    ):
        d = find(S, text, H, fallback=True, prefer=pref)
        S.D[name] = d
        S.G[name] = (
            None if d is None else val(S.robot.measure_object_geometry(d["id"], shape=shape))
        )
        g = S.G[name]
        out[name] = (
            None
            if not g
            else {
                "c": [round(v, 4) for v in g["center_m"]],
                "ext": [round(v, 4) for v in g["extents_m"]],
                "yaw": round(g["yaw_rad"], 3),
            }
        )
    return {"found": {n: out[n] is not None for n in out}, "geo": out}


@in_session
def find_nut_centre(S: State, box_offset: float = 0.018) -> dict[str, Any]:
    """Probe one candidate ring centre with the closed fingers: down through the hole (near the
    table) means the handle is on the other side of it. Sets S.m['nut_c'] and S.m['handle_u']."""
    g = S.G["square_nut"]
    ext, yaw = g["extents_m"], g["yaw_rad"]
    a = yaw if ext[0] >= ext[1] else yaw + math.pi / 2
    u = np.array([math.cos(a), math.sin(a)])
    box = np.array(g["center_m"][:2], dtype=float)
    cand = box - box_offset * u  # the ring centre if the handle points along +u
    jaw(S, "close")
    above = [float(cand[0]), float(cand[1]), 0.10]
    go(S, above, None, speed=0.08)
    r = go(S, [float(cand[0]), float(cand[1]), 0.016], None, speed=0.03)
    z = float(tcp(S)[2])
    go(S, above, None, speed=0.06)
    through = z < 0.02
    if not through:
        u = -u
    S.m["nut_c"] = (box - box_offset * u).tolist()
    S.m["handle_u"] = u.tolist()
    return {
        "probe_z": round(z, 4),
        "through_hole": through,
        "stop": stop_reason(r),
        "nut_c": [round(v, 4) for v in S.m["nut_c"]],
    }


@in_session
def grasp_handle(S: State, handle_m: float = 0.062, opening: float = 0.05) -> dict[str, Any]:
    """Grasp the handle across its width (the jaw closes across the handle axis), ``handle_m`` from
    the ring centre (its outer half: the fingers stay off the ring's corners), lift 12 cm."""
    c, u = np.array(S.m["nut_c"]), np.array(S.m["handle_u"])
    h = c + handle_m * u
    jaw(S, opening)
    q, gz = approach(S, h, 0.02, 0.008, math.atan2(u[1], u[0]) + math.pi / 2, None, 2, 0.08)
    if q is None:
        return {"held": False, "reason": "no grasp orientation"}
    r = go(S, [h[0], h[1], gz], None, speed=0.03)
    S.robot.move_to(jaw="close")
    t = tcp(S)
    S.m["grasp_off"] = (np.array([c[0], c[1]]) - t[:2]).tolist()  # ring centre - tool (xy)
    S.m["grasp_q"] = tcp(S, quat=True)
    S.m["grasp_z"] = float(t[2])
    held = holding(S)
    go(S, t + [0, 0, 0.12], None, speed=0.05, mode="manipulation")
    return {"down": stop_reason(r), "held": held and holding(S), "gz": round(gz, 4)}


@in_session
def over_peg(
    S: State, clearance: float = 0.025, peg_top: float = 0.13, engage: float = 0.035
) -> dict[str, Any]:
    """Carry the nut above the peg turned square to it, its bottom ``clearance`` above the peg's
    top: the handle toward my base if the arm accepts that pose and the one ``engage`` down the
    peg (the peg is near the edge of the Panda's reach), else sideways, else away."""
    peg = np.array(S.G["square_peg"]["center_m"][:2], dtype=float)
    u = np.array(S.m["handle_u"])
    phi0 = math.atan2(u[1], u[0])
    lift = peg_top + clearance + (S.m["grasp_z"] - 0.0)  # tool height: nut bottom at the table now
    turns = [wrap(math.pi + k * math.pi / 2 - phi0) for k in (0, 1, 3, 2)]
    for d in turns:
        q = qmul(qz(d), S.m["grasp_q"])
        off = np.array(S.m["grasp_off"])
        rot = np.array([[math.cos(d), -math.sin(d)], [math.sin(d), math.cos(d)]])
        t = peg - rot @ off
        p = [float(t[0]), float(t[1]), float(lift)]
        if ok(S, p, q) and ok(S, [p[0], p[1], S.m["grasp_z"] + peg_top - engage], q):
            r = go(S, p, q, speed=0.05, mode="manipulation")
            S.m["place"] = (p, q)
            return {
                "turn": round(d, 3),
                "at": [round(v, 4) for v in p],
                "move": stop_reason(r),
                "held": holding(S),
            }
    return {"turn": None, "held": holding(S)}


@in_session
def drop_on_peg(S: State, peg_top: float = 0.13, engage: float = 0.035) -> dict[str, Any]:
    """Lower the nut ``engage`` down over the peg's top (stops on a jam), let go (it slides down
    the peg: near the table the peg is at the edge of the Panda's reach), back off up, go home."""
    p, q = S.m["place"]
    target = S.m["grasp_z"] + peg_top - engage
    r = go(S, [p[0], p[1], target], q, speed=0.02, mode="manipulation", force=15.0)
    z = float(tcp(S)[2])
    bottom = z - S.m["grasp_z"]
    S.robot.release()
    S.robot.hold(duration_s=0.5)
    go(S, [p[0], p[1], max(z + 0.08, 0.20)], None, speed=0.05)
    ready(S)
    return {
        "lower": stop_reason(r),
        "nut_bottom_m": round(bottom, 4),
        "down": bottom < peg_top - engage / 2,
    }


@in_session
def check_nut(S: State, nut: str = "orange nut", peg: str = "orange peg") -> dict[str, Any]:
    """A fresh measurement of the nut against the peg (the latest one counts for finish())."""
    H = val(S.robot.observe(), "handle")
    n = find(S, nut, H, fallback=True)
    p = find(S, peg, H, fallback=True, prefer="tallest")
    if n is None or p is None:
        return {"found": False}
    m = val(S.robot.measure_object_geometry(n["id"], destination=p["id"]))
    if not m:
        return {"found": False}
    d = m["destination"]
    return {
        "found": True,
        "dist": d["distance_xy_m"],
        "held": m.get("held"),
        "bottom": round(m["top_z_m"] - m["extents_m"][2], 4),
    }


def _placed(notes: Notes) -> bool:
    return (
        bool(notes.get("found"))
        and float(notes.get("dist", 1.0)) <= 0.8 * GATE_XY_M
        and not notes.get("held")
    )


def plan(instruction: str = "") -> Plan:
    notes = yield Call("Measure the square nut and the square peg.", nut_and_peg)
    if not all((notes.get("found") or {}).values()):
        return
    yield Call(
        "The box fit cannot tell the handle's end from the ring's: probe one candidate ring "
        "centre with the closed fingers (through the hole, or onto the ring).",
        find_nut_centre,
    )
    notes = yield Call("Grasp the nut by its handle and lift it.", grasp_handle)
    if not notes.get("held"):
        return
    notes = yield Call("Carry the nut above the peg, square to it.", over_peg)
    if notes.get("turn") is None or not notes.get("held"):
        return
    notes = yield Call("Lower it down the peg, let go and back off.", drop_on_peg)
    if not notes.get("down"):
        return
    notes = yield Call("Measure the nut against the peg.", check_nut)
    if not _placed(notes):
        return
    yield from finish_with_retries(
        "square nut around the square peg",
        lambda: _check(),
        _placed,
    )


def _check() -> Plan:
    notes = yield Call("Measure the nut against the peg again.", check_nut)
    return notes


def resume(instruction: str = "") -> Plan:
    notes = yield Call("See where the nut stands against the peg.", check_nut)
    if _placed(notes):
        yield from finish_with_retries("square nut around the square peg", _check, _placed)
        return
    yield from plan(instruction)
