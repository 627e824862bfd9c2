"""Hostile robot calls sent straight to the robot and perception nodes (issue 32).

Under ROS a lone surrogate in ``segment`` used to kill the perception node's executor thread (every
later goal hung), and ``move_to`` with x = 1e12 kept the robot node at 100% CPU until it had grown to
11.6 GB. The nodes' ``RobotCall`` services validate like the in-process service: each hostile call
is answered ``invalid_argument`` at once, and both nodes go on serving real calls afterwards.
Real nodes in-process on a private domain, the real motion stack on the kinematic FakeBackend.
"""

from __future__ import annotations

import time

import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter

from captain_ros.backends.fake import FakeBackend
from captain_ros.core import FailureCategory
from captain_ros.ros.calls import RosRobotCaller

HOSTILE = [
    ("segment", {"text": "red \ud800 block"}),
    ("segment", {"text": "red\x00block"}),
    ("segment", {"text": "x" * 100_000}),
    ("point", {"text": "\udcff"}),
    ("mark_point", {"handle": "obs_1", "camera": "head", "u": 1e308, "v": 3.0}),
    ("check_motion", {"position": [1e12, 0.0, 0.2]}),
    ("check_motion", {"position": [2**64, 0.0, 0.2]}),
    ("move_to", {"position": [1e12, 0.0, 0.2]}),
    ("move_to", {"position": [0.3, 0.1, 0.2], "speed_m_s": 1e-9}),
    ("preview_motion", {"position": [0.3, 0.1, 0.2], "speed_m_s": 1e-300}),
    ("inspect_contact_geometry", {"obj": "det_1", "position": [1e308, 0.0, 0.2]}),
    ("transform_pose", {"position": [-1e308, 0.0, 0.2]}),
    ("segment", {"text": "red", "colour": "red"}),
]


@pytest.fixture
def graph(ros_context, spinner):
    from captain_ros.ros.perception_node import PerceptionNode
    from captain_ros.ros.robot_node import RobotNode
    from captain_ros.ros.runner import bring_up
    from captain_ros.tasks import get_task

    backend = FakeBackend(scene=get_task("pick_place").sample(1000))
    robot = RobotNode(
        backend=backend,
        context=ros_context,  # calls outside an episode: a bench
        parameter_overrides=[Parameter("require_episode", value=False)],
    )
    bring_up(robot)
    perception = PerceptionNode(robot.backend, context=ros_context)
    client = Node("hostile_client", context=ros_context)
    caller = RosRobotCaller(client, timeout_s=20.0)
    spinner.add(robot, perception, client)
    assert caller.wait_for_services(10.0)
    yield backend, caller
    spinner.shutdown()
    robot.trigger_shutdown()


def test_hostile_calls_are_refused_and_the_nodes_keep_serving(graph):
    backend, caller = graph
    for name, kwargs in HOSTILE:
        t0 = time.monotonic()
        res = caller.call(name, kwargs)
        assert res.failure_category is FailureCategory.INVALID_ARGUMENT, (name, res.message)
        assert time.monotonic() - t0 < 5.0 and not res.executed, (name, kwargs)
    obs = caller.call("observe", {})
    assert obs.success, obs.message
    seg = caller.call("segment", {"text": "red block"})
    assert seg.failure_category is not FailureCategory.INTERNAL_ERROR, seg.message
    p = backend.ee_pose("arm").position_m
    moved = caller.call("move_to", {"position": [float(p[0]), float(p[1]) + 0.03, float(p[2])]})
    assert moved.success and moved.executed, moved.message


def test_the_wall_budget_bounds_the_wait_for_a_node(graph):
    """The harness opens the episode's remaining wall time around each call; the ROS caller waits
    no longer than that plus 5 s."""
    from captain_ros.core import deadline

    backend, caller = graph
    servo = backend.servo

    def slow_servo(*args, **kwargs):  # 3 ms per 20 ms tick: the 59 s sweep takes > 9 s
        time.sleep(0.003)
        return servo(*args, **kwargs)

    backend.servo = slow_servo
    t0 = time.monotonic()
    with deadline.scope(0.5, "the episode's wall-time budget"):
        res = caller.call("move_to", {"position": [0.3, 0.15, 0.2], "duration_s": 59.0})
    assert res.failure_category is FailureCategory.TIMEOUT and "no reply within" in res.message
    assert time.monotonic() - t0 < 8.0
