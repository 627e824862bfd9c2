"""Locate: the earliest executable, causally consistent boundary with evidence, or an abstention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from re0_helpers import record

from captain_ros.harness.record.privileged_log import StateRecord
from captain_ros.research.re0.decision_points import RecordedEpisode
from captain_ros.research.re0.locate import Evidence, locate
from captain_ros.research.re0.seats import make_seats
from captain_ros.tasks import get_task

NAMES = ("reached", "grasped", "lifted", "placed")

STUDENT = "scripted-faulty:place_offset=1,skip_verify=1,offset_m=0.12"
"""The testbed student: the placement destination shifted 12 cm (off the plate), not verified."""


def call(
    name: str,
    success: bool = True,
    value: Any = None,
    kwargs: dict[str, Any] | None = None,
    category: str | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "kwargs": kwargs or {},
        "result": {
            "success": success,
            "executed": True,
            "failure_category": None if success else (category or "contact"),
            "message": "m",
            "value": value,
            "diagnostics": {},
            "budget": {},
            "receipt": name,
        },
    }


def request(
    t: int, calls: list[dict[str, Any]], error: str | None = None, code: str = "x = 1"
) -> dict[str, Any]:
    return {
        "type": "request",
        "t": t,
        "calls": [
            {
                "call_id": f"c{t}",
                "code": code,
                "output": "",
                "error": error,
                "robot_calls": calls,
                "timed_out": False,
                "crashed": False,
            }
        ],
    }


def episode(
    requests: list[dict[str, Any]], milestones: list[tuple[bool, ...]], **summary: Any
) -> RecordedEpisode:
    states = tuple(
        StateRecord(t + 1, np.zeros(36, np.float32), m, (m[-1],), False, False, all(m), None)
        for t, m in enumerate(milestones)
    )
    base = {
        "outcome": "other_failure",
        "strict_success": False,
        "host_success": False,
        "finished": False,
    }
    start = {
        "type": "episode_start",
        "task": "pick_place",
        "seed": 1,
        "session": {"hash_seed": 0, "rng_seed": None},
    }
    return RecordedEpisode(
        Path("/nonexistent"), start, tuple(requests), {**base, **summary}, states, ()
    )


F = (False,) * 4


def ms(n: int) -> tuple[bool, ...]:
    return tuple(i < n for i in range(4))


def test_a_drop_is_a_milestone_regression_at_its_request():
    rec = episode(
        [
            request(1, [call("move_to")]),
            request(2, [call("move_to", value={"holding": True}, kwargs={"jaw": "close"})]),
            request(3, [call("move_to")]),
            request(4, [call("observe")]),
        ],
        [F, ms(1), ms(3), ms(1), ms(1)],
    )
    loc = locate(rec, NAMES)
    assert loc.boundary_t == 3 and loc.evidence[0].source == "milestone_regression"
    assert "grasped, lifted held before request 3" in loc.evidence[0].detail
    assert loc.capabilities == ("move_to",)
    assert loc.evidence[-1].source == "other" and "ladder at 3 of 4" in loc.evidence[-1].detail


def test_a_grasp_without_holding_and_the_earliest_consistent_event():
    empty = call("move_to", value={"holding": False, "jaw_after_m": 0.0}, kwargs={"jaw": "close"})
    rec = episode(
        [
            request(1, [call("observe")], error="Traceback\nKeyError: 'x'"),
            request(2, [empty]),
            request(3, [call("move_to", False)]),
            request(4, [call("observe")]),
        ],
        [F, F, F, F, F],
    )
    loc = locate(rec, NAMES)
    assert loc.boundary_t == 1 and loc.evidence[0] == Evidence("exception", 1, "KeyError: 'x'")
    assert loc.candidates == (1, 2, 3)
    rec = episode([request(1, [call("observe")]), request(2, [empty])], [F, F, F])
    loc = locate(rec, NAMES)
    assert (
        loc.boundary_t == 2
        and loc.evidence[0].detail == "the jaw closed on nothing (a grasp without holding)"
    )


def test_events_made_good_later_are_not_causal():
    """A failed grasp followed by a successful one and progress is not the boundary."""
    empty = call("move_to", value={"holding": False}, kwargs={"jaw": "close"})
    rec = episode(
        [
            request(1, [empty]),
            request(2, [call("move_to", value={"holding": True}, kwargs={"jaw": "close"})]),
            request(
                3,
                [
                    call("release", value={"released": True}),
                    call("measure_object_geometry", value={"resting": False, "label": "red cube"}),
                ],
            ),
        ],
        [F, F, ms(3), ms(3)],
    )
    loc = locate(rec, NAMES)
    assert loc.boundary_t == 3 and loc.candidates == (3,)
    assert "not resting (a placement without resting)" in loc.evidence[0].detail


def test_a_false_finish_and_a_missed_finish():
    fin = call("finish", value={"accepted": True})
    rec = episode(
        [request(1, [call("observe")]), request(2, [fin])],
        [F, F, F],
        finished=True,
        outcome="false_finish",
    )
    loc = locate(rec, NAMES)
    assert loc.boundary_t == 2 and "accepted on an unsolved scene" in loc.evidence[0].detail
    done = (True,) * 4
    rec = episode(
        [
            request(1, [call("move_to")]),
            request(2, [call("observe")]),
            request(3, [call("observe")]),
        ],
        [F, done, done, done],
        host_success=True,
        outcome="missed_finish",
    )
    loc = locate(rec, NAMES)
    assert loc.boundary_t == 2 and "missed finish" in loc.evidence[0].detail


def test_it_abstains_with_the_reason():
    assert "succeeded" in locate(episode([request(1, [])], [F, F], strict_success=True)).reason
    quiet = locate(episode([request(1, [call("observe")])], [F, F]))
    assert quiet.abstained and "no structured evidence" in quiet.reason
    recovered = episode(
        [request(1, [call("move_to", False)]), request(2, [call("move_to")])], [F, F, ms(2)]
    )
    assert "made good later" in locate(recovered).reason
    no_priv = RecordedEpisode(
        Path("/x"), {}, (request(1, []),), {"outcome": "other_failure"}, (), ()
    )
    assert "privileged" in locate(no_priv).reason


def test_a_malformed_call_and_a_reply_without_one_are_evidence():
    """A learned student's failures: an unknown tool at request 2 (the harness's notice), a broken
    call after it, then prose with no tool call, which ends the episode at request 4."""
    bad = {**request(2, []), "calls": [], "malformed": ['unknown tool "note(**perceive(S"']}
    rec = episode(
        [
            request(1, [call("get_robot_state")]),
            bad,
            request(3, [], "NameError: x"),
            request(4, []),
        ],
        [F] * 5,
        end_reason="no_tool_call",
    )
    loc = locate(rec)
    assert loc.boundary_t == 2 and loc.candidates == (2, 3, 4)
    assert loc.evidence[0] == Evidence(
        "exception", 2, 'the reply\'s tool call could not be run: unknown tool "note(**perceive(S"'
    )
    prose = episode(
        [request(1, [call("get_robot_state")]), request(2, [])], [F] * 3, end_reason="no_tool_call"
    )
    only = locate(prose)
    assert only.boundary_t == 2 and "had no tool call" in only.evidence[0].detail
    assert locate(episode([request(1, []), request(2, [])], [F] * 3)).abstained  # budget, say


def test_a_boundary_that_cannot_be_restored_is_skipped():
    """The earliest event sits after a wall-clock cell: not executable, the next one is not either."""
    rec = episode(
        [
            request(1, [call("observe")], code="import time\nT = time.time()"),
            request(2, [call("move_to", False)]),
            request(3, [call("move_to", False)]),
        ],
        [F, F, F, F],
    )
    loc = locate(rec, NAMES)
    assert loc.abstained and "is executable" in loc.reason and "wall clock" in loc.reason
    assert loc.candidates == (2, 3)


@pytest.mark.parametrize("backend", ["fake"])
def test_a_real_faulty_placement_is_located(tmp_path, backend):
    """The testbed student's shifted placement: the boundary is the placement after the skew."""
    pol, _ = make_seats(STUDENT, "takeover")
    rec = record(tmp_path / "f", "pick_place", 3, backend, policy=pol, rng_seed=3)
    try:
        loc = locate(rec.rec, get_task("pick_place").milestone_names)
        fault = pol.events[0]  # type: ignore[attr-defined]
        assert fault.fault == "place_offset" and fault.call == "place"
        skew = rec.rec.requests[fault.request - 1]
        assert (
            skew["policy_info"]["faults"][0]["fault"] == "place_offset"
        )  # named in PolicyReply.info
        assert "skew(S, 'plate'" in str(skew["calls"][0]["code"])
        assert (
            loc.boundary_t == fault.request + 1 and loc.evidence[0].source == "milestone_regression"
        )
        assert "place(S, 'red_cube', 'plate')" in str(
            rec.rec.requests[loc.boundary_t - 1]["calls"][0]["code"]
        )
        assert "release" in loc.capabilities and not rec.record.strict_success
    finally:
        rec.backend.close()
