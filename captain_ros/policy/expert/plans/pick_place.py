"""pick_place: put the red cube on the plate (tolerance 3.5 cm in TASK.md)."""

from __future__ import annotations

from captain_ros.policy.expert.cells import Notes, Plan
from captain_ros.policy.expert.resume import resume_transfer, take_stock
from captain_ros.policy.expert.routines import finish_with_retries, transfer, verified, verify_on

TOL_M = 0.035


def _finish(notes: Notes) -> Plan:
    if not verified(notes, TOL_M):
        return  # a missed finish is better than a false one
    yield from finish_with_retries(
        f"red cube on the plate, {100 * (notes.get('dist') or 0):.1f} cm from its centre",
        lambda: verify_on("red_cube", "red cube", "plate", "plate"),
        lambda n: verified(n, TOL_M),
    )


def plan(instruction: str = "") -> Plan:
    notes = yield from transfer("red_cube", "red cube", "plate", "plate", TOL_M)
    yield from _finish(notes)


def resume(instruction: str = "") -> Plan:
    held = yield from take_stock()
    notes = yield from resume_transfer("red_cube", "red cube", "plate", "plate", TOL_M, held)
    yield from _finish(notes)
