"""robosuite's tasks with the same helper library (``robosuite_lift``, ``robosuite_stack``).

Where the Panda differs from the PiPER, nothing here changes: the helpers read the rig from the
robot API (reach, jaw, cameras) and measure the scene afresh. Lift: grasp the red cube top-down,
lift 10 cm, measure it while held and finish when its centre is clear of the gate's 5 cm with a
centimetre to spare. Stack: the red cube onto the green one; robosuite places the two cubes a few
centimetres apart, closer than the Panda's open jaw (8 cm), so before the grasp I choose the pair
of faces whose closing axis points away from the other cube (:func:`clear_axis`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from captain_ros.policy.expert import kit, skills
from captain_ros.policy.expert.cells import Call, Notes, Plan
from captain_ros.policy.expert.kit import State
from captain_ros.policy.expert.resume import put_down, take_stock
from captain_ros.policy.expert.routines import (
    all_found,
    finish_with_retries,
    grasp_top_down,
    perceive,
    place_on,
    verified,
    verify_on,
)
from captain_ros.policy.expert.source import in_session

TABLE_TOP_Z_M = 0.0  # the robosuite backend puts the table top at z = 0, as on our rigs
LIFT_NEED_M = 0.06  # the gate's 5 cm for the cube's centre, plus 1 cm
STACK_TOL_M = 0.025


def _lift_height(notes: Notes) -> float | None:
    geo = (notes.get("geo") or {}).get("red_cube") if isinstance(notes.get("geo"), dict) else None
    if not isinstance(geo, dict) or not geo.get("c"):
        return None
    return float(geo["c"][2]) - TABLE_TOP_Z_M


def _measure_held() -> Plan:
    notes = yield Call(
        "Measure the red cube afresh while I hold it up, to check its height above the table.",
        skills.perceive,
        ({"red_cube": "red cube"},),
    )
    return notes


def lift(instruction: str = "") -> Plan:
    notes = yield from perceive({"red_cube": "red cube"})
    if not all_found(notes):
        yield Call(
            "The cube is not in view: move the arm out of the head camera's way, then look again.",
            kit.aside,
            key="aside",
        )
        notes = yield from perceive({"red_cube": "red cube"})
        if not all_found(notes):
            return
    yield from _lift_and_finish()


def _lift_and_finish() -> Plan:
    held = yield from grasp_top_down("red_cube", "red cube", lift_m=0.10)
    if not held:
        return
    notes = yield from _measure_held()
    h = _lift_height(notes)
    if h is None or h < LIFT_NEED_M:
        return  # a missed finish is better than a false one

    def high_enough(n: Notes) -> bool:
        z = _lift_height(n)
        return z is not None and z >= LIFT_NEED_M

    yield from finish_with_retries(
        f"red cube held up, its centre {100 * h:.1f} cm above the table", _measure_held, high_enough
    )


def lift_resume(instruction: str = "") -> Plan:
    if (yield from take_stock()):
        notes = yield from _measure_held()
        if (_lift_height(notes) or 0.0) >= LIFT_NEED_M:
            yield from finish_with_retries(
                "red cube held up", _measure_held, lambda n: (_lift_height(n) or 0.0) >= LIFT_NEED_M
            )
            return
        yield Call(
            "I hold the cube but not high enough to show it: put it down and start over.", put_down
        )
    yield from lift(instruction)


@in_session
def clear_axis(S: State, name: str, others: Sequence[str]) -> dict[str, Any]:
    """Grasp ``name`` across the pair of faces whose closing axis points most nearly across the
    direction to the other objects (the open jaw must not land on them): sets its face yaw."""
    g = S.G[name]
    c = np.array(g["center_m"][:2], dtype=float)
    dirs = [np.array(S.G[o]["center_m"][:2], dtype=float) - c for o in others if S.G.get(o)]
    dirs = [d / np.linalg.norm(d) for d in dirs if np.linalg.norm(d) > 1e-6]
    if not dirs:
        return {"axis": None}
    yaw = float(g["yaw_rad"])

    def along(a: float) -> float:  # how much the closing axis points at a neighbour (0..1)
        return max(abs(math.cos(a) * d[0] + math.sin(a) * d[1]) for d in dirs)

    best = min((yaw, yaw + math.pi / 2), key=along)
    g["yaw_rad"] = best
    return {"axis": round(best, 3), "along": round(along(best), 3)}


def transfer_clear(obj: str, obj_prompt: str, dest: str, dest_prompt: str, tol_m: float) -> Plan:
    """Pick ``obj`` (jaw axis clear of ``dest``) and place it on ``dest``; verify; one retry."""
    both = {obj: obj_prompt, dest: dest_prompt}
    notes = yield from perceive(both, dest=(obj, dest))
    for attempt in range(2):
        if not all_found(notes):
            yield Call(
                "Not everything is in view: move the arm out of the head camera's way, then "
                "look again.",
                kit.aside,
                key="aside",
            )
            notes = yield from perceive(both, dest=(obj, dest))
            if not all_found(notes):
                return notes
        yield Call(
            f"The {dest.replace('_', ' ')} stands close to the {obj.replace('_', ' ')}: close "
            "the jaw across the faces that keep the open fingers off it.",
            clear_axis,
            (obj, [dest]),
        )
        held = yield from grasp_top_down(obj, obj_prompt, faces=2)
        if not held:
            return notes
        yield from perceive({dest: dest_prompt}, keep=True)
        placed = yield from place_on(obj, dest)
        if not placed.get("placed"):
            yield Call(
                "I could not lower the object onto the support from here: set it back down "
                "where I am and re-plan.",
                skills.set_down,
                (obj,),
            )
            notes = yield from perceive(both, dest=(obj, dest))
            continue
        notes = yield from verify_on(obj, obj_prompt, dest, dest_prompt)
        if verified(notes, 0.85 * tol_m) or attempt:
            return notes
        notes = yield from perceive(both, dest=(obj, dest))
    return notes


def _stack_finish(notes: Notes) -> Plan:
    if not verified(notes, STACK_TOL_M):
        return
    yield from finish_with_retries(
        "red cube on the green cube",
        lambda: verify_on("red_cube", "red cube", "green_cube", "green cube"),
        lambda n: verified(n, STACK_TOL_M),
    )


def stack(instruction: str = "") -> Plan:
    notes = yield from transfer_clear(
        "red_cube", "red cube", "green_cube", "green cube", STACK_TOL_M
    )
    yield from _stack_finish(notes)


def stack_resume(instruction: str = "") -> Plan:
    if (yield from take_stock()):
        yield Call("I hold a cube: put it down, then see what stands where.", put_down)
    notes = yield from verify_on("red_cube", "red cube", "green_cube", "green cube")
    if not verified(notes, 0.85 * STACK_TOL_M):
        yield from stack(instruction)
        return
    yield from _stack_finish(notes)
