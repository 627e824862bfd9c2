"""The scripted expert's cells shared by several tasks, as session functions (see :mod:`.kit`).

One function is the body of one request: it acts, and returns the note the cell prints
(``note(**perceive(S, ...))``), which the expert's plan reads to choose the next request. The
records they leave in ``S``: ``S.G[name]`` the latest geometry of an object, ``S.D[name]`` its
detection, ``S.grasp[name]`` the tool-minus-object offset at the grasp.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.policy.expert.kit import (
    State,
    approach,
    aside,
    climb,
    go,
    holding,
    jaw,
    ready,
    rise,
    stop_reason,
    tcp,
    val,
)
from captain_ros.policy.expert.look import find, measure
from captain_ros.policy.expert.source import in_session

Notes = dict[str, Any]


@in_session
def perceive(
    S: State,
    names: Mapping[str, str],
    dest: Sequence[str] | None = None,
    prefer: Mapping[str, str] | None = None,
    keep: bool = False,
) -> Notes:
    """Observe, find each ``{name: prompt}`` and measure it (``dest`` = (name, its destination's
    name): measured against it). ``prefer`` ranks several matches by geometry. ``keep``: an object
    not seen now (e.g. hidden by the arm) keeps its earlier records."""
    prefer = prefer or {}
    obs = S.robot.observe()
    H = val(obs, "handle")
    S.cams = val(obs, "cameras", default=[])
    old_D, old_G = dict(S.D), dict(S.G)
    for name, prompt in names.items():
        S.D[name] = find(S, prompt, H, fallback=True, prefer=prefer.get(name))
    for name in names:
        if dest is not None and name == dest[0]:
            S.G[name] = measure(S, S.D[name], S.D.get(dest[1]))
        else:
            S.G[name] = measure(S, S.D[name])
        if keep and S.G[name] is None and old_G.get(name) is not None:  # hidden now: not touched
            S.D[name], S.G[name] = old_D[name], old_G[name]
    geo = {
        n: None
        if S.G.get(n) is None
        else {
            "c": [round(v, 4) for v in S.G[n]["center_m"]],
            "ext": [round(v, 4) for v in S.G[n]["extents_m"]],
            "yaw": round(S.G[n]["yaw_rad"], 3),
            "top": round(S.G[n]["top_z_m"], 4),
        }
        for n in names
    }
    return {"found": {n: S.G.get(n) is not None for n in names}, "geo": geo}


@in_session
def descend(
    S: State,
    name: str,
    from_top: float | None = None,
    faces: int = 4,
    clearance: float = 0.08,
    arm: str | None = None,
    aim: Sequence[float] | None = None,
) -> Notes:
    """Open the jaw, move above the object aligned with its faces, then descend guarded to the
    grasp height: its centre, or ``from_top`` [m] below its top. ``aim`` shifts the aim (x, y) [m]."""
    g = S.G[name]
    c = np.array(g["center_m"], dtype=float)
    if aim is not None:
        c[:2] += np.asarray(aim, dtype=float)
    gz = max(g["center_m"][2], 0.014) if from_top is None else max(g["top_z_m"] - from_top, 0.014)
    jaw(S, "open", arm=arm)
    Q, gz = approach(S, c, g["top_z_m"], gz, g["yaw_rad"], arm, faces, clearance)
    r_down = (
        go(S, [c[0], c[1], gz], None, speed=0.03, arm=arm)
        if Q is not None
        else {"success": False, "failure_category": "no_feasible_orientation"}
    )
    return {
        "above": "aligned" if Q is not None else None,
        "down": stop_reason(r_down),
        "down_ok": bool(r_down.get("success")),
        "gz": gz,
    }


@in_session
def close_lift(S: State, name: str, lift: float = 0.10, arm: str | None = None) -> Notes:
    """Close the jaw, record the tool-minus-object offset and lift in manipulation mode, as high
    as the joints allow."""
    r_close = jaw(S, "close", arm=arm)
    t = tcp(S, arm)
    S.grasp[name] = (t - np.array(S.G[name]["center_m"], dtype=float)).tolist()
    held = holding(S, arm)
    for L in (lift, round(0.6 * lift, 3), 0.04):
        r_lift = go(S, t + [0, 0, L], None, speed=0.05, mode="manipulation", arm=arm)
        if r_lift.get("success"):
            break
    return {
        "held_closed": held,
        "held": holding(S, arm),
        "lift": stop_reason(r_lift),
        "jaw_after": val(r_close, "jaw_after_m"),
    }


@in_session
def back_off(S: State, arm: str | None = None) -> Notes:
    """After a descent that stopped early: back out, up 6 cm, home."""
    r = S.robot.recover(distance_m=0.03, arm=arm)
    go(S, tcp(S, arm) + [0, 0, 0.06], arm=arm)
    r2 = ready(S, arm)
    return {"recovered": stop_reason(r), "ready": stop_reason(r2)}


@in_session
def reset(S: State, arm: str | None = None) -> Notes:
    """After a grasp that closed empty: open, up 6 cm, home."""
    jaw(S, "open", arm=arm)
    go(S, tcp(S, arm) + [0, 0, 0.06], arm=arm)
    ready(S, arm)
    return {"reset": True}


@in_session
def place(S: State, name: str, onto: str, margin: float = 0.004, carry_z: float = 0.14) -> Notes:
    """Carry the held object above ``onto`` (an object in ``S.G``, or a table spot in ``S.m``) by
    the grasp offset, lower it to a few mm above its rest height, release, retreat straight up."""
    g = S.G[name]
    h = g["extents_m"][2]
    off = np.array(S.grasp[name], dtype=float)
    xy, top = (S.G[onto]["center_m"], S.G[onto]["top_z_m"]) if onto in S.G else (S.m[onto], 0.0)
    txy = np.array(xy, dtype=float)[:2] + off[:2]
    rest_z = float(top) + h / 2 + off[2]
    t = tcp(S)
    go(S, [t[0], t[1], max(t[2], carry_z)], None, speed=0.05, mode="manipulation")
    # a feasible orientation above the support (turning about the vertical keeps the grasp)
    Qp, z_ok = approach(
        S,
        txy,
        rest_z,
        rest_z + margin,
        None,
        None,
        4,
        max(carry_z - rest_z, 0.06),
        mode="manipulation",
    )
    r_lower = (
        go(S, [txy[0], txy[1], z_ok], None, speed=0.03, mode="manipulation")
        if Qp is not None
        else {"success": False, "failure_category": "no_feasible_orientation"}
    )
    placed = bool(r_lower.get("success")) and holding(S)
    r_rel = S.robot.release() if placed else None
    # straight up off it, then (when the joints stop a vertical tool low, near the base) tilted:
    # going home from just above it would sweep the fingers through what I just placed
    z_rel = float(tcp(S)[2])
    up = rise(S, mode="guarded" if placed else "manipulation")
    if placed and up < 0.07:
        climb(S, z_rel + 0.08)
    if placed:
        S.robot.hold(duration_s=0.5)  # stay above it: the wrist camera looks straight down
    return {
        "placed": placed,
        "lower": stop_reason(r_lower),
        "released": val(r_rel, "released"),
        "z": z_ok,
        "target": [round(v, 4) for v in txy],
    }


@in_session
def set_down(S: State, name: str) -> Notes:
    """Put the held object down where I am (3 cm above the table), let go, go home."""
    t = tcp(S)
    go(S, [t[0], t[1], 0.03 + S.G[name]["extents_m"][2] / 2], None, speed=0.03, mode="manipulation")
    S.robot.release()
    go(S, tcp(S) + [0, 0, 0.08])
    ready(S)
    return {"reset": True}


@in_session
def verify(S: State, obj: str, obj_prompt: str, dest: str, dest_prompt: str) -> Notes:
    """A fresh measurement of obj against dest (head camera; with the arm aside when either is
    hidden; the wrist camera from above when 'not resting' may be a half-hidden support), then
    home. Notes: xy distance, resting, camera, and the gap under obj's bottom [m]."""
    obs = S.robot.observe()
    H = val(obs, "handle")
    S.cams = val(obs, "cameras", default=[])
    S.D[obj] = find(S, obj_prompt, H, fallback=True)
    cam = (S.D[obj] or {}).get("camera", "head")
    S.D[dest] = find(S, dest_prompt, H, cam) or find(S, dest_prompt, H, fallback=True)
    if S.D[obj] is None or S.D[dest] is None:  # hidden from here: look with the arm aside
        aside(S, (S.G.get(obj) or {}).get("center_m"))
        H = val(S.robot.observe(), "handle")
        S.D[obj] = S.D[obj] or find(S, obj_prompt, H, fallback=True)
        S.D[dest] = S.D[dest] or find(S, dest_prompt, H, fallback=True)
    gf = measure(S, S.D[obj], S.D[dest]) if S.D[dest] is not None else None
    if gf is not None:
        S.G[obj] = gf
    if gf is not None and not gf.get("resting"):
        c = np.array(gf["center_m"], dtype=float)
        Qv, _ = approach(S, c, gf["top_z_m"], gf["top_z_m"] + 0.06, None, None, 4, 0.10)
        if Qv is not None:
            H2 = val(S.robot.observe(), "handle")
            for wc in [x for x in S.cams if "wrist" in x][:1]:
                o2 = find(S, obj_prompt, H2, wc)
                d2 = find(S, dest_prompt, H2, wc) or S.D[dest]
                g2 = measure(S, o2, d2) if o2 is not None else None
                if g2 is not None and g2.get("destination") and g2.get("resting"):
                    gf = S.G[obj] = g2
                    cam = wc
    d = (gf or {}).get("destination") or {}
    gap = (
        None if gf is None or not d else round(gf["top_z_m"] - gf["extents_m"][2] - d["top_z_m"], 4)
    )
    notes = {
        "dist": d.get("distance_xy_m"),
        "resting": (gf or {}).get("resting"),
        "cam": cam,
        "gap": gap,
    }
    ready(S)
    return notes


@in_session
def finish(S: State, summary: str) -> Notes:
    """Declare completion; notes whether the gate accepted, and its reason."""
    f = S.robot.finish(summary=summary)
    return {
        "accepted": bool(val(f, "accepted", default=f.get("success"))),
        "reason": val(f, "reason", default=f.get("message")),
    }


__all__ = [
    "back_off",
    "close_lift",
    "descend",
    "finish",
    "perceive",
    "place",
    "reset",
    "set_down",
    "verify",
]
