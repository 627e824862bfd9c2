"""Completion gate, budgets, outcome labels and per-episode call accounting (EpisodeCalls)."""

from __future__ import annotations

import numpy as np
import pytest

from captain_ros.core.result import FailureCategory, Result
from captain_ros.harness.episode.budgets import Budgets, BudgetTracker
from captain_ros.harness.episode.calls import MAX_RECEIPTS_SHOWN, EpisodeCalls
from captain_ros.harness.episode.gate import CompletionGate
from captain_ros.harness.record.episode_record import OUTCOMES, outcome_label


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class FakeCaller:
    """A RobotCaller stand-in (the ROS client has the same two methods)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def call(self, name, kwargs):
        self.calls.append(name)
        if kwargs.get("position") == "bad":
            return Result.fail(FailureCategory.INVALID_ARGUMENT, "bad position")
        if name == "measure_object_geometry":
            return Result.ok("measured", {"object_id": kwargs["obj"], "center_m": [0.1, 0.2, 0.3]})
        return Result.ok(
            f"{name} done", {}, executed=name in ("move_to", "hold"), receipt=f"{name}: fine"
        )

    def image(self, handle, camera):
        return np.full((8, 8, 3), 120, np.uint8) if handle == "obs_1" else None


def test_gate_rejects_twice_then_accepts():
    gate = CompletionGate(lambda ms: (False, "red is 5 cm from blue"))
    r1, r2, r3 = gate.finish("a"), gate.finish("b"), gate.finish("c")
    assert [r.success for r in (r1, r2, r3)] == [False, False, True]
    assert (
        r1.failure_category == FailureCategory.GATE_REJECTED
        and "red is 5 cm from blue" in r1.message
    )
    assert "2 more call(s)" in r1.message and "1 more call(s)" in r2.message
    assert "accepted after 2 rejections" in r3.message and r3.receipt.startswith("finish: ACCEPTED")
    assert gate.accepted and gate.rejections == 2
    assert [d.passed_check for d in gate.decisions] == [False, False, False]


def test_gate_reads_only_recorded_successful_measurements():
    seen = []
    gate = CompletionGate(
        lambda ms: seen.append(list(ms)) or (len(ms) == 1, "need one measurement")
    )
    gate.record("measure_object_geometry", Result.fail(FailureCategory.NOT_DETECTED, "nope"))
    gate.record("segment", Result.ok("x", {"detections": []}))
    assert not gate.finish().success
    gate.record("measure_object_geometry", Result.ok("m", {"object_id": "det_1"}))
    r = gate.finish()
    assert r.success and seen[-1] == [{"object_id": "det_1"}] and gate.rejections == 1


def test_gate_survives_a_broken_check():
    gate = CompletionGate(lambda ms: 1 / 0)
    r = gate.finish()
    assert not r.success and "ZeroDivisionError" in r.message


def test_budgets_and_tracker():
    assert Budgets() == Budgets(60, 1080.0, 150)
    with pytest.raises(ValueError):
        Budgets(max_requests=0)
    clock = Clock()
    tr = BudgetTracker(Budgets(2, 10.0, 1), clock)
    assert tr.exhausted() is None
    tr.physical_actions = 1
    assert tr.exhausted() == "physical_actions"
    clock.t = 11.0
    assert tr.exhausted() == "wall_time"
    tr.requests = 2
    assert tr.exhausted() == "requests"
    snap = tr.snapshot()
    assert (
        snap["requests_left"] == 0
        and snap["physical_actions_used"] == 1
        and snap["wall_s_left"] == 0.0
    )


@pytest.mark.parametrize(
    ("host", "finish", "budget", "label"),
    [
        (True, True, None, "success_with_finish"),
        (True, False, None, "missed_finish"),
        (True, False, "requests", "missed_finish"),
        (False, True, None, "false_finish"),
        (False, True, "requests", "false_finish"),
        (False, False, "wall_time", "budget_exhausted"),
        (False, False, None, "other_failure"),
    ],
)
def test_outcome_labels(host, finish, budget, label):
    assert outcome_label(host, finish, budget) == label and label in OUTCOMES


@pytest.fixture
def calls(tmp_path):
    clock = Clock()
    tracker = BudgetTracker(Budgets(60, 100.0, 2), clock)
    ec = EpisodeCalls(
        FakeCaller(), tracker, CompletionGate(lambda ms: (bool(ms), "measure first")), tmp_path
    )
    ec.begin_cell(1, 0)
    return ec, clock


def test_physical_actions_are_counted_and_refused_when_spent(calls):
    ec, _ = calls
    assert (
        ec.execute("move_to", {"position": "bad"}).failure_category
        == FailureCategory.INVALID_ARGUMENT
    )
    assert ec.tracker.physical_actions == 0  # nothing was attempted
    assert ec.execute("observe", {}).budget["physical_actions_left"] == 2
    assert ec.execute("move_to", {"position": [0.3, 0, 0.2]}).success
    r = ec.execute("hold", {})
    assert r.success and r.budget["physical_actions_left"] == 0 and ec.exhausted is None
    r = ec.execute("hold", {})
    assert (
        r.failure_category == FailureCategory.BUDGET_EXHAUSTED
        and ec.exhausted == "physical_actions"
    )
    assert ec.robot.calls.count("hold") == 1
    assert ec.execute("get_robot_state", {}).success  # free calls still work


def test_wall_time_refuses_calls(calls):
    ec, clock = calls
    clock.t = 101.0
    r = ec.execute("observe", {})
    assert r.failure_category == FailureCategory.BUDGET_EXHAUSTED and ec.exhausted == "wall_time"
    assert ec.robot.calls == []


def test_finish_goes_to_the_gate_with_measurements(calls):
    ec, _ = calls
    r = ec.execute("finish", {"summary": "done"})
    assert r.failure_category == FailureCategory.GATE_REJECTED and "measure first" in r.message
    ec.execute("measure_object_geometry", {"obj": "det_1"})
    assert ec.execute("finish", {"summary": "done"}).success and ec.finish_accepted
    assert "finish" not in ec.robot.calls
    assert ec.execute("finish", {"summary": 3}).failure_category == FailureCategory.INVALID_ARGUMENT


def test_unknown_names_and_receipt_block(calls):
    ec, _ = calls
    r = ec.execute("teleport", {})
    assert r.failure_category == FailureCategory.UNKNOWN_ID and "valid: observe" in r.message
    for _ in range(30):
        ec.execute("get_robot_state", {})
    block = ec.receipts_block().splitlines()
    assert len(block) == MAX_RECEIPTS_SHOWN + 1 and block[-1] == "[... 11 more receipts not shown]"
    assert all(len(line) <= 310 for line in block)
    assert len(ec.log.robot_calls) == 31


def test_images_at_most_four_per_cell(calls):
    ec, _ = calls
    msgs = [ec.on_image("obs_1", "head") for _ in range(5)]
    assert msgs[0].startswith("attached image 1/4") and "at most 4" in msgs[4]
    assert len(ec.log.images) == 4 and (ec.episode_dir / ec.log.images[0].path).exists()
    ec.begin_cell(1, 1)
    assert "no image for handle 'obs_9'" in ec.on_image("obs_9", "head")


def test_call_observer_sees_every_final_result(tmp_path):
    seen: list = []
    tracker = BudgetTracker(
        Budgets(max_requests=5, max_wall_s=100.0, max_physical_actions=2), Clock()
    )
    ec = EpisodeCalls(
        FakeCaller(),
        tracker,
        CompletionGate(lambda ms: (True, "")),
        tmp_path,
        observer=lambda ev: seen.append((ev.name, ev.kwargs, ev.result, ev.duration_s, ev.index)),
    )
    ec.begin_cell(1, 0)
    ec.execute("move_to", {"position": [0.3, 0, 0.2]})
    ec.execute("teleport", {})
    ec.execute("finish", {"summary": "done"})
    assert [s[0] for s in seen] == ["move_to", "teleport", "finish"]
    assert seen[0][2].budget["physical_actions_left"] == 1  # the budget is attached before
    assert seen[1][2].failure_category == FailureCategory.UNKNOWN_ID
    assert seen[2][2].success and all(s[3] >= 0 for s in seen)
    assert [s[4] for s in seen] == [1, 2, 3]  # call index within the episode


def test_a_failing_observer_does_not_break_calls(tmp_path):
    def boom(*_args):
        raise RuntimeError("observer bug")

    tracker = BudgetTracker(Budgets(), Clock())
    ec = EpisodeCalls(
        FakeCaller(), tracker, CompletionGate(lambda ms: (True, "")), tmp_path, observer=boom
    )
    ec.begin_cell(1, 0)
    assert ec.execute("observe", {}).success
