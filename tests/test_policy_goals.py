"""The policy node's goal bookkeeping and answers without ROS (captain_ros.ros.goal_slot,
captain_ros.ros.goal_answer): what a lost or canceled episode refuses, when the robot's gate is
closed, how a refused goal and a goal whose episode ran are answered, and the result written
back into the episode folder.

``Handle`` stands in for rclpy's ``ServerGoalHandle`` (the attributes the node uses) and a
namespace for the ``RunEpisode.Result`` message; the robot processes are the live instance that
:meth:`captain_ros.ros.liveness.Liveness.lost_since` compares against."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.core.result import FailureCategory
from captain_ros.harness.record.episode_record import EpisodeRecord, load_record
from captain_ros.ros.goal_answer import (
    Refusal,
    estop_latched,
    fill_result,
    no_heartbeat,
    outcome_label,
    refuse,
    settle,
    unauthenticated,
)
from captain_ros.ros.goal_slot import SHUTTING_DOWN, GoalSlot


class Handle:
    """A goal handle: its cancel request and the state it was ended in."""

    def __init__(self, cancel: bool = False) -> None:
        self.is_cancel_requested = cancel
        self.state = "executing"

    def abort(self) -> None:
        self.state = "aborted"

    def canceled(self) -> None:
        self.state = "canceled"

    def succeed(self) -> None:
        self.state = "succeeded"


class RobotProcesses:
    """The live robot process's instance id ("" while none is alive)."""

    def __init__(self, instance: str) -> None:
        self.instance = instance

    def lost_since(self, instance: str) -> str | None:
        if not self.instance:
            return f"the robot process {instance} died"
        if instance != self.instance:
            return f"the robot process {instance} died and was replaced by {self.instance}"
        return None


def test_an_episode_is_lost_when_its_robot_process_dies_or_is_replaced() -> None:
    robots = RobotProcesses("1-1")
    slot = GoalSlot(robots.lost_since)
    assert slot.lost() is None and slot.call_refusal("move_to", {}) is None  # no goal yet
    robots.instance = ""
    assert slot.lost() is None  # between episodes nothing is lost
    robots.instance = "1-1"
    goal = Handle()
    slot.open(goal, "1-1")
    assert (slot.goal, slot.robot_instance) == (goal, "1-1")
    assert slot.lost() is None and slot.stop_reason() is None
    robots.instance = "2-2"  # a respawn: the episode's robot is gone
    assert slot.lost() == "the robot process 1-1 died and was replaced by 2-2"
    assert slot.stop_reason() == "robot_lost"
    refusal = slot.call_refusal("move_to", {"jaw": 0.03})
    assert refusal is not None and refusal.failure_category == FailureCategory.HARDWARE
    assert refusal.message.startswith("move_to: the robot process 1-1 died")
    assert "nothing was executed" in refusal.message
    # lost: the gate is closed only on a live robot process (a dead one has none)
    assert slot.close("lost", robot_alive=True) and slot.goal is None
    slot.open(goal, "2-2")
    assert not slot.close("lost", robot_alive=False)
    assert slot.close(None, robot_alive=False)  # a whole episode always closes it


def test_a_canceled_goal_refuses_calls_before_a_lost_one() -> None:
    robots = RobotProcesses("")
    slot = GoalSlot(robots.lost_since)
    slot.open(Handle(cancel=True), "1-1")  # canceled, and its robot died too
    refusal = slot.call_refusal("grasp", {})
    assert refusal is not None and refusal.failure_category == FailureCategory.BUDGET_EXHAUSTED
    assert "canceled by the operator" in refusal.message


def test_a_shutdown_loses_the_episode_and_keeps_the_gate_as_it_is() -> None:
    slot = GoalSlot(RobotProcesses("1-1").lost_since)
    slot.open(Handle(), "1-1")
    slot.stop()
    assert slot.lost() == SHUTTING_DOWN and slot.stop_reason() == "node_shutdown"
    assert slot.stop_label() == "node_shutdown"
    assert not slot.close(SHUTTING_DOWN, robot_alive=True)  # no more calls to the robot
    assert slot.lost() == SHUTTING_DOWN  # also between episodes


def test_a_refused_goal_is_aborted_with_its_label_and_error() -> None:
    warned: list[str] = []
    res = SimpleNamespace(outcome_label="", summary_json="")
    goal = Handle()
    assert refuse(goal, res, estop_latched("/captain/estop/reset"), warned.append) is res
    assert goal.state == "aborted" and res.outcome_label == "estop"
    error = json.loads(res.summary_json)["error"]
    assert "/captain/estop/reset" in error and warned == [f"goal aborted (estop): {error}"]
    assert unauthenticated("bad mac") == Refusal(
        "unauthenticated", "goal refused: bad mac; nothing was executed"
    )
    late = no_heartbeat(5.0)
    assert late.label == "robot_not_ready" and "within 5 s" in late.error


def test_an_episode_that_ran_is_answered_by_how_it_ended() -> None:
    assert outcome_label(True, "lost", "robot_lost", "false_finish") == "canceled"
    assert outcome_label(False, "died", "robot_lost", "false_finish") == "robot_lost"
    assert outcome_label(False, None, "robot_lost", "success_with_finish") == "success_with_finish"
    errors: list[str] = []
    for handle, lost, state in (
        (Handle(cancel=True), "died", "canceled"),
        (Handle(), "the robot process 1-1 died", "aborted"),
        (Handle(), None, "succeeded"),
    ):
        settle(handle, "ep1", lost, errors.append)
        assert handle.state == state
    assert errors == ["episode ep1 ended early: the robot process 1-1 died"]


def _result() -> Any:
    return SimpleNamespace(failures=0, bag_path="", bag_complete=False, bag_status="")


def test_the_result_and_the_folder_summary_carry_the_bag(tmp_path: Path) -> None:
    record = EpisodeRecord(
        task="pick_place",
        seed=3,
        outcome="success_with_finish",
        host_success=True,
        strict_success=True,
        requests=4,
        robot_calls=9,
        physical_actions=5,
        wall_s=2.5,
    )
    record.write(EpisodeFiles(tmp_path).summary)
    res = _result()
    bag = SimpleNamespace(path="/bags/ep1", complete=False, status="incomplete: missing {}")
    fill_result(res, record, 2, bag, None, tmp_path)
    assert (res.requests, res.calls, res.physical_actions, res.failures) == (4, 9, 5, 2)
    assert res.host_success and res.strict_success and res.wall_time_s == 2.5
    assert (res.bag_path, res.bag_complete) == ("/bags/ep1", False)
    written = load_record(tmp_path)  # the folder's summary names the bag too
    assert (written.bag_path, written.bag_complete) == ("/bags/ep1", False)
    assert written.extra["bag_status"] == "incomplete: missing {}"
    assert json.loads(res.summary_json)["error"] == ""  # the record's own: none
    lost = _result()
    none = SimpleNamespace(path="", complete=False, status="none: no recorder was running")
    fill_result(lost, record, 0, none, "the robot process 1-1 died", tmp_path)
    summary = json.loads(lost.summary_json)
    assert summary["error"] == "the robot process 1-1 died" and summary["bag_path"] == ""
    assert load_record(tmp_path).bag_path == "/bags/ep1"  # no bag: the folder is left alone
