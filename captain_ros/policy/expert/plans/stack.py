"""stack: red on green on blue (tolerance 2 cm per level in TASK.md)."""

from __future__ import annotations

from captain_ros.policy.expert.cells import Plan
from captain_ros.policy.expert.routines import finish_with_retries, transfer, verified, verify_on

TOL_M = 0.02


def both() -> Plan:
    """Verify both levels of the tower; returns the top level's notes."""
    yield from verify_on("green_cube", "green cube", "blue_cube", "blue cube")
    notes = yield from verify_on("red_cube", "red cube", "green_cube", "green cube")
    return notes


def plan(instruction: str = "") -> Plan:
    notes = yield from transfer("green_cube", "green cube", "blue_cube", "blue cube", TOL_M)
    if not verified(notes, TOL_M):
        return
    notes = yield from transfer("red_cube", "red cube", "green_cube", "green cube", TOL_M)
    if not verified(notes, TOL_M):
        return
    notes = yield from both()
    if not verified(notes, TOL_M):
        return
    yield from finish_with_retries("tower: red on green on blue", both, lambda n: verified(n, TOL_M))
