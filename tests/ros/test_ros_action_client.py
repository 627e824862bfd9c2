"""captain_ros.ros.action_client: a goal's answer taken while the sender is descheduled still
completes the future it returned (rclpy 9.1.2's own client loses it; see the module docstring).

The window (between rclpy's locked send and its second registration) is microseconds wide; the
test widens it by making the feedback-callback registration, which rclpy does inside the window,
take a second. A real server in the same process answers within that second.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionClient as RclpyActionClient
from rclpy.action import ActionServer, GoalResponse
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from ros_fixtures import ROOT, wait_until

from captain_ros.ros.action_client import ActionClient

ACTION = "/arm_controller/follow_joint_trajectory"
WINDOW_S = 1.0


class _SlowDict(dict):  # type: ignore[type-arg]
    """A dict whose writes take :data:`WINDOW_S`: the sending thread descheduled, on demand."""

    def __setitem__(self, key: Any, value: Any) -> None:
        time.sleep(WINDOW_S)
        super().__setitem__(key, value)


class _Graph:
    """A FollowJointTrajectory server and a client node spun by one single-threaded executor in a
    background thread, as the ROS arm bridge spins its node."""

    def __init__(self, context: Any) -> None:
        self.accepted = 0
        self.server_node = Node("fake_controller", context=context)
        self.client_node = Node("bridge", context=context)
        self.server = ActionServer(
            self.server_node,
            FollowJointTrajectory,
            ACTION,
            execute_callback=self._execute,
            goal_callback=self._accept,
        )
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.server_node)
        self.executor.add_node(self.client_node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _accept(self, _goal: Any) -> GoalResponse:
        self.accepted += 1
        return GoalResponse.ACCEPT

    def _execute(self, handle: Any) -> Any:
        handle.succeed()
        return FollowJointTrajectory.Result()

    def _spin(self) -> None:
        with contextlib.suppress(ExternalShutdownException):
            self.executor.spin()

    def send(self, client: Any) -> tuple[threading.Event, Any]:
        assert client.wait_for_server(timeout_sec=10.0), "the server was not discovered"
        client._feedback_callbacks = _SlowDict()
        answered = threading.Event()
        future = client.send_goal_async(
            FollowJointTrajectory.Goal(), feedback_callback=lambda _fb: None
        )
        future.add_done_callback(lambda _f: answered.set())
        return answered, future

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self.server_node.destroy_node()
        self.client_node.destroy_node()


@pytest.fixture
def graph(ros_context: Any) -> Iterator[_Graph]:
    g = _Graph(ros_context)
    yield g
    g.close()


def test_the_answer_taken_inside_the_window_completes_the_returned_future(graph: _Graph) -> None:
    client = ActionClient(graph.client_node, FollowJointTrajectory, ACTION)
    answered, future = graph.send(client)
    assert answered.wait(10.0), "the goal's answer never reached the returned future"
    assert future.result().accepted and graph.accepted == 1
    result = future.result().get_result_async()
    done = threading.Event()
    result.add_done_callback(lambda _f: done.set())
    assert done.wait(10.0) and result.result().status == GoalStatus.STATUS_SUCCEEDED


def test_the_pinned_rclpy_client_loses_that_answer(graph: _Graph) -> None:
    """Why captain_ros.ros.action_client exists. When this fails, the pinned rclpy registers one
    future: drop the subclass and this test."""
    client = RclpyActionClient(graph.client_node, FollowJointTrajectory, ACTION)
    answered, _future = graph.send(client)
    wait_until(lambda: graph.accepted == 1, 10.0, what="the server to accept the goal")
    assert not answered.wait(3 * WINDOW_S), (
        "rclpy's send_goal_async delivered an answer taken inside the window: the pinned rclpy "
        "no longer has the double registration; captain_ros.ros.action_client can go"
    )


def test_no_module_uses_rclpy_s_action_client_directly() -> None:
    """Every action client of the project goes through captain_ros.ros.action_client."""
    direct = re.compile(r"^\s*from rclpy\.action import .*\bActionClient\b", re.MULTILINE)
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("captain_ros", "tests", "benchmarks", "scripts")
        for p in (ROOT / folder).rglob("*.py")
        if direct.search(p.read_text(encoding="utf-8"))
        and p.name not in ("action_client.py", "test_ros_action_client.py")
    ]
    assert not offenders, f"use captain_ros.ros.action_client.ActionClient in {offenders}"
