"""stack: red on green on blue (tolerance 2 cm per level in TASK.md)."""

from __future__ import annotations

from captain_ros.policy.expert.cells import Call, Plan
from captain_ros.policy.expert.resume import put_down, take_stock
from captain_ros.policy.expert.routines import finish_with_retries, transfer, verified, verify_on

TOL_M = 0.02
LOWER = ("green_cube", "green cube", "blue_cube", "blue cube")
UPPER = ("red_cube", "red cube", "green_cube", "green cube")


def both() -> Plan:
    """Verify both levels of the tower; returns the top level's notes."""
    yield from verify_on(*LOWER)
    notes = yield from verify_on(*UPPER)
    return notes


def _upper_and_finish() -> Plan:
    notes = yield from transfer(*UPPER, TOL_M)
    if not verified(notes, TOL_M):
        return
    yield from _check_and_finish()


def _check_and_finish() -> Plan:
    notes = yield from both()
    if not verified(notes, TOL_M):
        return
    yield from finish_with_retries(
        "tower: red on green on blue", both, lambda n: verified(n, TOL_M)
    )


def plan(instruction: str = "") -> Plan:
    notes = yield from transfer(*LOWER, TOL_M)
    if not verified(notes, TOL_M):
        return
    yield from _upper_and_finish()


def resume(instruction: str = "") -> Plan:
    if (yield from take_stock()):
        yield Call("I hold a cube: put it down, then see what stands where.", put_down)
    lower = yield from verify_on(*LOWER)
    if not verified(lower, 0.85 * TOL_M):
        yield from plan(instruction)
        return
    upper = yield from verify_on(*UPPER)
    if not verified(upper, 0.85 * TOL_M):
        yield from _upper_and_finish()
        return
    yield from _check_and_finish()
