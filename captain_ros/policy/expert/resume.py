"""Resuming a task mid-episode: from a session that lost my state, or one another policy ran.

The expert then knows nothing but what it can measure now. Each task's ``resume`` plan starts by
taking stock (is a jaw holding something? where are the objects, measured afresh?), infers where
the task stands (already done, held, placed, untouched) and continues from there with the same
steps as its full plan. The session functions here are the pieces of that stock-taking.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from captain_ros.policy.expert.cells import Call, Plan
from captain_ros.policy.expert.kit import (
    State,
    base_xy,
    go,
    holding,
    jaw,
    qmul,
    qrot,
    ready,
    rise,
    tcp,
    val,
)
from captain_ros.policy.expert.look import find, measure
from captain_ros.policy.expert.routines import perceive, place_on, transfer, verified, verify_on
from captain_ros.policy.expert.source import in_session


@in_session
def rest_poses(S: State, offset: Sequence[float] = (0.2321, 0.0, 0.1217)) -> dict[Any, Any]:
    """The pose each arm starts from, from the rig geometry (for taking over without having seen
    the start): a PiPER's tool point rests (joints 0, 80, -55, 0, 70, 0 deg) ``offset`` [m] from
    its base, in the base frame, the tool pointing straight down."""
    base_xy(S)
    out = {}
    for a, arm in (S.geom.get("arms") or {}).items():
        bp = arm.get("base_pose") or {}
        q = bp.get("quat_wxyz", [1.0, 0.0, 0.0, 0.0])
        p = np.asarray(bp.get("position_m", [0.0, 0.0, 0.0]), dtype=float) + qrot(q, offset)
        out[a] = (p.tolist(), qmul(q, [0.0, 0.0, -1.0, 0.0]))
    return out


@in_session
def hands(S: State) -> dict[str, Any]:
    """Which arms hold something now."""
    return {"held": {str(a): holding(S, a) for a in S.arms}}


@in_session
def settle(S: State) -> dict[str, Any]:
    """Take stock of the hands: an arm that holds nothing opens, rises straight up and goes home
    (out of the camera's way); one that holds something stays where it is."""
    held = {}
    for a in S.arms:
        held[str(a)] = holding(S, a)
        if not held[str(a)]:
            jaw(S, "open", arm=a)
            rise(S, a)
            ready(S, a)
    return {"held": held}


@in_session
def in_hand(S: State, name: str, prompt: str, arm: str | None = None) -> dict[str, Any]:
    """Find and measure the object I hold; its centre must be within 8 cm of the tool point. Then
    its records and the tool-minus-object offset are as after my own grasp."""
    H = val(S.robot.observe(), "handle")
    d = find(S, prompt, H, fallback=True)
    g = measure(S, d)
    t = tcp(S, arm)
    if g is None or np.linalg.norm(t - np.array(g["center_m"], dtype=float)) > 0.08:
        return {"in_hand": False}
    S.D[name], S.G[name] = d, g
    S.grasp[name] = (t - np.array(g["center_m"], dtype=float)).tolist()
    return {"in_hand": True, "off": [round(v, 4) for v in S.grasp[name]]}


@in_session
def remember(S: State, key: str, value: Any) -> dict[str, Any]:
    """Note a value for later cells (``S.m[key]``)."""
    S.m[key] = value
    return {key: value}


@in_session
def put_down(S: State, arm: str | None = None) -> dict[str, Any]:
    """Lower what I hold until it touches (10 N), let go, rise straight up, go home."""
    t = tcp(S, arm)
    go(S, [t[0], t[1], 0.02], None, speed=0.03, mode="manipulation", arm=arm, force=10)
    S.robot.release(arm=arm)
    rise(S, arm)
    ready(S, arm)
    return {"held": holding(S, arm)}


def take_stock() -> Plan:
    """Settle the hands; returns whether any arm holds something."""
    notes = yield Call(
        "Take stock of where the task stands: which hand holds something? An empty "
        "hand opens, rises and goes home, out of the camera's view.",
        settle,
    )
    held = notes.get("held")
    return isinstance(held, dict) and any(held.values())


def resume_transfer(
    obj: str, obj_prompt: str, dest: str, dest_prompt: str, tol_m: float, held: bool
) -> Plan:
    """Continue "put obj on dest" from what I measure now: carry on if I hold obj, stop if it is
    already there, otherwise do the whole transfer. Returns the final notes."""
    if held:
        notes = yield Call(
            f"I hold something: find and measure the {obj.replace('_', ' ')} in my "
            "hand, to carry it by its offset.",
            in_hand,
            (obj, obj_prompt),
        )
        if notes.get("in_hand"):
            yield from perceive({dest: dest_prompt}, keep=True)
            placed = yield from place_on(obj, dest)
            if placed.get("placed"):
                notes = yield from verify_on(obj, obj_prompt, dest, dest_prompt)
                if verified(notes, 0.85 * tol_m):
                    return notes
        else:
            yield Call("What I hold is not it: put it down and look again.", put_down)
    notes = yield from verify_on(obj, obj_prompt, dest, dest_prompt)
    if verified(notes, 0.85 * tol_m):
        return notes
    notes = yield from transfer(obj, obj_prompt, dest, dest_prompt, tol_m)
    return notes
