"""robosuite_door: turn the lever handle of robosuite's latched door and pull the door open.

robosuite's door (``door_lock.xml``) is latched until its lever is turned about 1.3 rad (measured:
at 1.2 rad part of the swing is free, at 1.5 rad all of it); the lever is a 15 cm bar standing 10 cm
in front of the door on a hub, its free end toward my base. The segmenter fits bar and hub as one
brass box whose long axis is the bar's; from it and robosuite's door geometry (as the TwoArmLift
plan uses the pot's handle length) I place the bar, the lever's hub and the door's hinge
(:func:`door_frame`). I grasp the bar 10 cm from the hub, jaw closing across it, turn the lever
free end down in steps about its axis (the tool turning with it), pull the door open about its
hinge in steps while holding the lever down, let go, and measure the handle again: finish()
needs it 9 cm away from where I first measured it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from captain_ros.policy.expert.cells import Call, Notes, Plan
from captain_ros.policy.expert.kit import (
    State,
    go,
    holding,
    jaw,
    qmul,
    ready,
    stop_reason,
    tcp,
    val,
)
from captain_ros.policy.expert.routines import finish_with_retries
from captain_ros.policy.expert.source import in_session

MOVED_M = 0.10  # the gate asks 9 cm of handle travel; I want 1 cm more


@in_session
def find_high(S: State, prompt: str) -> Any:
    """The longest good detection of ``prompt`` in a fresh head image, at any height (``find``
    keeps objects on the table only; the door's handle is 27 cm up). Longest: the lever's 15 cm bar
    with its hub, not a part of it or of the latch behind the opened door."""
    H = val(S.robot.observe(), "handle")
    dets = val(S.robot.segment(prompt, handle=H, camera="head"), "detections", default=[]) or []
    dets = [x for x in dets if x.get("score", 0.0) >= 0.35]
    return (
        max(dets, key=lambda x: (round(x.get("score", 0.0), 1), max(x["extents_m"][:2])))
        if dets
        else None
    )


@in_session
def door_frame(S: State, prompt: str = "orange handle", name: str = "handle") -> dict[str, Any]:
    """Measure the lever handle (a box: its long axis is the bar's) and place, in the door's
    frame (d along the bar toward my base, n out of the door), the bar's centre, the lever's
    hub and the hinge from robosuite's door: the box centre sits 1.3 cm behind and 1.9 cm inward
    of the bar's centre; the hub is 7.5 cm along the bar, the hinge 35.5 cm the other way and
    10 cm into the door."""
    det = find_high(S, prompt)
    if det is None:
        return {"found": False}
    S.D[name] = det
    g = val(S.robot.measure_object_geometry(det["id"], shape="box"))
    if not g:
        return {"found": False}
    S.G[name] = g
    ext, yaw = g["extents_m"], g["yaw_rad"]
    a = yaw if ext[0] >= ext[1] else yaw + math.pi / 2
    d = np.array([math.cos(a), math.sin(a), 0.0])
    if d[0] > 0:  # the free end points back toward my base
        d = -d
    n = np.array([d[1], -d[0], 0.0])
    if n[1] < 0:
        n = -n
    c = np.array(g["center_m"], dtype=float)
    z = float(g["top_z_m"]) - 0.025  # the hub's top is 2.5 cm above the lever's axis
    bar = c + 0.0128 * d + 0.0185 * n
    bar[2] = z
    S.m["door"] = {
        "d": d.tolist(),
        "n": n.tolist(),
        "bar": bar.tolist(),
        "hub": (bar - 0.075 * d).tolist(),
        "hinge": (bar + 0.355 * d - 0.10 * n).tolist(),
    }
    return {
        "found": True,
        "bar": [round(v, 3) for v in bar],
        "yaw": round(math.atan2(d[1], d[0]), 3),
    }


@in_session
def mat_q(R: Any) -> list[float]:
    """The unit quaternion (w, x, y, z) of the rotation matrix ``R`` (columns = frame axes)."""
    R = np.asarray(R, dtype=float)
    w = math.sqrt(max(0.0, 1.0 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    x = math.copysign(math.sqrt(max(0.0, 1.0 + R[0, 0] - R[1, 1] - R[2, 2])) / 2, R[2, 1] - R[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1.0 - R[0, 0] + R[1, 1] - R[2, 2])) / 2, R[0, 2] - R[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1.0 - R[0, 0] - R[1, 1] + R[2, 2])) / 2, R[1, 0] - R[0, 1])
    return [w, x, y, z]


@in_session
def grasp_lever(
    S: State, r: float = 0.10, opening: float = 0.07, standoff: float = 0.10
) -> dict[str, Any]:
    """Grasp the bar ``r`` from the hub from the front: the tool points into the door (along -n),
    the jaw closes across the bar's height (the hand's width then stands vertical, clear of the
    door); come in from ``standoff`` in front, guarded."""
    f = S.m["door"]
    d, n, hub = (np.array(f[k]) for k in ("d", "n", "hub"))
    p = hub + r * d  # the hub point is on the bar's centre line (and on the lever's axis)
    z_t, y_t = -n, np.array([0.0, 0.0, 1.0])
    q = mat_q(np.column_stack([np.cross(y_t, z_t), y_t, z_t]))
    jaw(S, opening)
    pre = go(S, (p + standoff * n).tolist(), q, speed=0.06)
    if not pre.get("success") or val(pre, "stop_reason") not in (None, "reached"):
        return {"held": False, "pre": stop_reason(pre)}
    ins = go(S, (p - 0.005 * n).tolist(), q, speed=0.03)
    S.robot.move_to(jaw="close", mode="manipulation", force_limit_n=70)
    return {"in": stop_reason(ins), "held": holding(S), "at": [round(v, 3) for v in p]}


@in_session
def axis_q(axis: Any, angle: float) -> list[float]:
    """The quaternion (w, x, y, z) of a turn by ``angle`` [rad] about the unit ``axis``."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    s = math.sin(angle / 2)
    return [math.cos(angle / 2), float(a[0] * s), float(a[1] * s), float(a[2] * s)]


@in_session
def turn_about(
    S: State, centre: Any, axis: Any, angles: Any, force: float = 40.0
) -> dict[str, Any]:
    """Turn the tool (and what it holds) about the line through ``centre`` along ``axis`` by each
    of ``angles`` [rad] in turn (from where it is now), manipulation mode; stop at the first
    step that fails. Returns the last angle reached."""
    c = np.asarray(centre, dtype=float)
    p0, q0 = tcp(S), tcp(S, quat=True)
    done, why = 0.0, None
    for th in angles:
        R = axis_q(axis, th)
        v = p0 - c
        u = np.array(R[1:])
        p = c + v + 2 * np.cross(u, np.cross(u, v) + R[0] * v)
        r = S.robot.move_to(
            position=p.tolist(),
            orientation=qmul(R, q0),
            speed_m_s=0.04,
            mode="manipulation",
            force_limit_n=force,
        )
        why = stop_reason(r)
        if not r.get("success"):
            break
        done = th
    return {"reached": round(done, 3), "last": why, "held": holding(S)}


@in_session
def turn_lever(S: State, steps: int = 6, angle: float = 1.45) -> dict[str, Any]:
    """Turn the lever free end down by ``angle`` [rad] about its axis (n through the hub)."""
    f = S.m["door"]
    return turn_about(
        S, f["hub"], [-v for v in f["n"]], [angle * (k + 1) / steps for k in range(steps)]
    )


@in_session
def swung(R: Any, centre: Any, v: Any, about_centre: bool = True) -> np.ndarray:
    """Point ``v`` turned by quaternion ``R`` about ``centre`` (a direction when not
    ``about_centre``)."""
    c = np.asarray(centre, dtype=float) if about_centre else np.zeros(3)
    w = np.asarray(v, dtype=float) - c
    u = np.array(R[1:])
    return c + w + 2 * np.cross(u, np.cross(u, w) + R[0] * w)


@in_session
def pull_door(S: State, steps: int = 7, angle: float = 0.37, lever: float = 1.45) -> dict[str, Any]:
    """Swing the door open about its hinge (vertical) by ``angle`` [rad], holding the lever down;
    then turn the lever back up (it would spring up against the fingers), let go, back out along
    the door's normal and go home."""
    f = S.m["door"]
    res = turn_about(
        S, f["hinge"], [0.0, 0.0, 1.0], [angle * (k + 1) / steps for k in range(steps)]
    )
    R = axis_q([0.0, 0.0, 1.0], res["reached"])
    hub = swung(R, f["hinge"], f["hub"])
    n_now = swung(R, None, f["n"], about_centre=False)
    back = turn_about(S, hub.tolist(), (-n_now).tolist(), [-lever * (k + 1) / 3 for k in range(3)])
    S.robot.release()
    out = go(S, (tcp(S) + 0.08 * n_now).tolist(), None, speed=0.05, mode="manipulation", force=30.0)
    home = ready(S)
    return {
        **res,
        "lever_back": back["reached"],
        "out": stop_reason(out),
        "home": stop_reason(home),
    }


@in_session
def handle_moved(S: State, prompt: str = "orange handle", name: str = "handle") -> dict[str, Any]:
    """A fresh measurement of the handle, and how far it is from my first one [m]."""
    first = S.G.get(name)
    det = find_high(S, prompt)
    if det is None or first is None:
        return {"found": False}
    g = val(S.robot.measure_object_geometry(det["id"], shape="box"))
    if not g:
        return {"found": False}
    moved = float(np.linalg.norm(np.subtract(g["center_m"][:2], first["center_m"][:2])))
    return {"found": True, "moved": round(moved, 4)}


def _open(notes: Notes) -> bool:
    return bool(notes.get("found")) and float(notes.get("moved", 0.0)) >= MOVED_M


def plan(instruction: str = "") -> Plan:
    notes = yield Call(
        "Measure the door's lever handle and place its hub and the hinge.", door_frame
    )
    if not notes.get("found"):
        return
    notes = yield Call("Grasp the lever's bar from above.", grasp_lever)
    if not notes.get("held"):
        return
    notes = yield Call("Turn the lever down to unlatch the door.", turn_lever)
    notes = yield Call("Pull the door open about its hinge, let go and back off.", pull_door)
    notes = yield Call("Measure the handle again: it moves with the door.", handle_moved)
    if not _open(notes):
        return
    yield from finish_with_retries("door open", _remeasure, _open)


def _remeasure() -> Plan:
    notes = yield Call("Measure the handle again.", handle_moved)
    return notes


def resume(instruction: str = "") -> Plan:
    """After a lost session the first measurement is gone: start over from a fresh one (an open
    door's handle is then measured where it stands, and the gate wants it to move)."""
    yield from plan(instruction)
