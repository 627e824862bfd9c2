"""robosuite's tasks with the same helper library (``robosuite_lift``, ``robosuite_stack``).

Where the Panda differs from the PiPER, nothing here changes: the helpers read the rig from the
robot API (reach, jaw, cameras) and measure the scene afresh. Lift: grasp the red cube top-down,
lift 10 cm, measure it while held and finish when its centre is clear of the gate's 5 cm with a
centimetre to spare. Stack: the red cube onto the green one with the shared transfer routine.
"""

from __future__ import annotations

from captain_ros.policy.expert import kit, skills
from captain_ros.policy.expert.cells import Call, Notes, Plan
from captain_ros.policy.expert.resume import put_down, take_stock
from captain_ros.policy.expert.routines import (
    all_found,
    finish_with_retries,
    grasp_top_down,
    perceive,
    transfer,
    verified,
    verify_on,
)

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


def _stack_finish(notes: Notes) -> Plan:
    if not verified(notes, STACK_TOL_M):
        return
    yield from finish_with_retries(
        "red cube on the green cube",
        lambda: verify_on("red_cube", "red cube", "green_cube", "green cube"),
        lambda n: verified(n, STACK_TOL_M),
    )


def stack(instruction: str = "") -> Plan:
    notes = yield from transfer("red_cube", "red cube", "green_cube", "green cube", STACK_TOL_M)
    yield from _stack_finish(notes)


def stack_resume(instruction: str = "") -> Plan:
    if (yield from take_stock()):
        yield Call("I hold a cube: put it down, then see what stands where.", put_down)
    notes = yield from verify_on("red_cube", "red cube", "green_cube", "green cube")
    if not verified(notes, 0.85 * STACK_TOL_M):
        yield from stack(instruction)
        return
    yield from _stack_finish(notes)
