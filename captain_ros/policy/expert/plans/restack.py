"""restack: the blue cube starts on the red one; put the red cube on the blue cube (2 cm)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from captain_ros.policy.expert.cells import Call, Plan
from captain_ros.policy.expert.kit import State, base_xy, val
from captain_ros.policy.expert.resume import put_down, take_stock
from captain_ros.policy.expert.routines import (
    finish_with_retries,
    grasp_top_down,
    perceive,
    place_on,
    transfer,
    verified,
    verify_on,
)
from captain_ros.policy.expert.source import in_session

TOL_M = 0.02


@in_session
def free_spot(S: State) -> dict[str, Any]:
    """A reachable table spot (26-34 cm from the base, within 40 deg of straight ahead) as far as
    possible from every object I can see; remembered as ``S.m['free']``."""
    H = val(S.robot.observe(), "handle")
    others = val(S.robot.segment("objects", handle=H), "detections", default=[]) or []
    pts = [np.array(d["centroid_m"][:2]) for d in others]
    best: Any = None
    best_d: Any = -1.0
    for r in (0.26, 0.30, 0.34):
        for b in np.linspace(-0.7, 0.7, 15):
            p = base_xy(S) + r * np.array([math.cos(b), math.sin(b)])
            dmin = min([np.linalg.norm(p - q) for q in pts] + [1.0])
            if dmin > best_d:
                best, best_d = p, dmin
    S.m["free"] = best
    return {"free": np.round(best, 3), "clearance": round(best_d, 3)}


def _move_blue_aside() -> Plan:
    """Take the blue cube off the red one and put it on a free spot."""
    yield from perceive({"blue_cube": "blue cube", "red_cube": "red cube"})
    held = yield from grasp_top_down("blue_cube", "blue cube")
    if held:
        yield Call(
            "Find a free spot on the table for the blue cube: reachable, at least 9 cm from "
            "every object I can see.",
            free_spot,
        )
        yield from place_on("blue_cube", "free")


def _restack_and_finish() -> Plan:
    notes = yield from transfer("red_cube", "red cube", "blue_cube", "blue cube", TOL_M)
    if not verified(notes, TOL_M):
        return
    yield from finish_with_retries(
        "red cube restacked on the blue cube",
        lambda: verify_on("red_cube", "red cube", "blue_cube", "blue cube"),
        lambda n: verified(n, TOL_M),
    )


def plan(instruction: str = "") -> Plan:
    yield from _move_blue_aside()
    yield from _restack_and_finish()


def resume(instruction: str = "") -> Plan:
    if (yield from take_stock()):
        yield Call("I hold a cube: put it down, then see what stands where.", put_down)
    done = yield from verify_on("red_cube", "red cube", "blue_cube", "blue cube")
    if verified(done, 0.85 * TOL_M):
        yield from finish_with_retries(
            "red cube restacked on the blue cube",
            lambda: verify_on("red_cube", "red cube", "blue_cube", "blue cube"),
            lambda n: verified(n, TOL_M),
        )
        return
    start = yield from verify_on("blue_cube", "blue cube", "red_cube", "red cube")
    if verified(start, TOL_M):  # the blue cube still sits on the red one
        yield from _move_blue_aside()
    yield from _restack_and_finish()
