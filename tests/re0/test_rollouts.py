"""Paired counterfactual rollouts from a decision point: both arms share xi, workers run them."""

from __future__ import annotations

from pathlib import Path

import pytest
from re0_helpers import TESTBED_STUDENT, faulty_student_loop, record

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.re0.contracts import RepairContract, scope_cost
from captain_ros.research.re0.locate import locate
from captain_ros.research.re0.loop import API, _verify_event
from captain_ros.research.re0.rollouts import EventSpec, PairedRunner, draw_seed, release_points
from captain_ros.research.re0.seats import make_seats
from captain_ros.research.re0.verify import VerifierConfig
from captain_ros.tasks import get_task

STUDENT = TESTBED_STUDENT
SEGMENT = 8
"""The takeover's setup, taking stock, a fresh look, the placement, its check and finish fit in 8."""


def _event(tmp_path, backend: str, teacher: str, noise, channel: str = "success"):
    pol, _ = make_seats(STUDENT, "takeover")
    rec = record(tmp_path / "student", "pick_place", 3, backend, policy=pol, rng_seed=3)
    rec.backend.close()
    loc = locate(rec.rec, get_task("pick_place").milestone_names)
    assert loc.boundary_t is not None and not rec.record.strict_success
    contract = RepairContract(loc.boundary_t, API, SEGMENT, scope_cost(SEGMENT, len(API)))
    return EventSpec(
        f"ev-{teacher}",
        str(tmp_path / "student"),
        contract.to_dict(),
        STUDENT,
        teacher,
        str(tmp_path / "rollouts"),
        backend,
        noise,
        channel,
    )


@pytest.mark.slow
def test_in_process_pairs_on_the_fake_robot(tmp_path):
    """Deterministic student that always misplaces: the expert's takeover wins every pair, and the
    student itself as teacher (the null control) ties every pair."""
    spec = _event(tmp_path, "fake", "takeover", None)
    runner = PairedRunner(spec, workers=1)
    try:
        draws = runner(0, 2)
        same = PairedRunner(
            EventSpec(**{**spec.__dict__, "event_id": "ev-self", "teacher": "self"})
        )(0, 1)
    finally:
        release_points()
    assert [(d.xi, d.teacher_return, d.student_return) for d in draws] == [
        (0, 1.0, 0.0),
        (1, 1.0, 0.0),
    ]
    assert [(d.teacher_return, d.student_return) for d in same] == [(0.0, 0.0)]
    teacher = next(r for r in runner.records if r.extra["rollout"]["arm"] == "teacher")
    turns = teacher.extra["rollout"]["turns"]
    assert (
        all(x["source"] == "seat" for x in turns[: spec.t - 1])
        and turns[spec.t - 1]["source"] == "repair"
    )
    assert 1 < sum(x["source"] == "repair" for x in turns) <= SEGMENT
    lines = [
        x
        for x in (Path(teacher.out_dir) / "trajectory.jsonl").read_text().splitlines()
        if '"type": "request"' in x
    ]
    assert (
        "_foreign = dict(globals())" in lines[spec.t - 1]
    )  # the takeover's own setup at the boundary
    assert teacher.requests > spec.t and teacher.out_dir.endswith("xi000_teacher")


@pytest.mark.slow
def test_a_contract_the_teacher_cannot_fulfil_is_invalid_not_escalated(tmp_path):
    """The takeover sets itself up by reading the robot's state and geometry; a contract of
    ``finish`` alone leaves it nothing to write: the draws are the student twice, so the first
    look ends the audit (invalid, with the reason and the rollouts it took) instead of feeding the
    escalation identical pairs."""
    spec = _event(tmp_path, "fake", "takeover", None)
    cfg = faulty_student_loop(tmp_path / "g", workers=1)
    contract = RepairContract(spec.t, ("finish",), SEGMENT, scope_cost(SEGMENT, 1))
    vcfg = VerifierConfig(schedule=(2, 4))
    try:
        v, runner = _verify_event(cfg, STUDENT, "ev-f", spec.source, contract, 0.05, vcfg)
    finally:
        release_points()
    assert v.verdict == "invalid" and not v.admitted and v.rollouts_spent == 4
    assert "declined the contract in all 2 teacher-arm rollouts" in v.valid_reason
    assert (
        "cannot take over within this contract: my setup calls get_robot_state, robot_geometry"
        in v.valid_reason
    )
    for r in runner.records:  # both arms ran the student from the boundary on
        assert not any(x["source"] == "repair" for x in r.extra["rollout"]["turns"])


def test_bad_specs_are_refused(tmp_path):
    with pytest.raises(InvalidArgumentError, match="no stochastic mode"):
        EventSpec("e", "x", {"boundary_t": 1}, "s", "takeover", str(tmp_path), "fake", {})
    with pytest.raises(InvalidArgumentError, match="channel"):
        EventSpec(
            "e", "x", {"boundary_t": 1}, "s", "takeover", str(tmp_path), "mujoco", {}, "reward"
        )
    assert draw_seed("e", 1, "noise") != draw_seed("e", 2, "noise") != draw_seed("e", 1, "policy")


@pytest.mark.slow
def test_mujoco_pairs_share_their_draw_in_spawned_workers(tmp_path):
    """Stochastic mode, two spawned workers: the expert's takeover helps, the takeover making the
    student's mistake does not, and the two arms of a draw ran under the same noise draw (a new
    one per draw)."""
    clean = _event(tmp_path, "mujoco", "takeover", {})
    runner = PairedRunner(clean, workers=2)
    draws = runner(0, 2)
    assert all(d.teacher_return == 1.0 and d.student_return == 0.0 for d in draws)
    noise = {
        (r.extra["rollout"]["xi"], r.extra["rollout"]["arm"]): r.extra["decision_points"]["noise"]
        for r in runner.records
    }
    assert (
        noise[(0, "teacher")]
        == noise[(0, "student")]
        != noise[(1, "teacher")]
        == noise[(1, "student")]
    )
    assert noise[(0, "teacher")]["seed"] == draw_seed(clean.event_id, 0, "noise")
    harmful = PairedRunner(
        EventSpec(**{**clean.__dict__, "event_id": "ev-h", "teacher": "takeover-faulty"}), workers=2
    )
    assert all(d.teacher_return <= d.student_return for d in harmful(0, 2))
    # each rollout names the mistakes its teacher's segment made: none for the clean takeover and
    # the student arms, the seeded misplacement for every draw of the harmful one
    assert all(r.extra["rollout"]["teacher_faults"] == [] for r in runner.records)
    struck = {
        r.extra["rollout"]["xi"]: [f["fault"] for f in r.extra["rollout"]["teacher_faults"]]
        for r in harmful.records
        if r.extra["rollout"]["arm"] == "teacher"
    }
    assert sorted(struck) == [0, 1] and all("place_offset" in s for s in struck.values())
