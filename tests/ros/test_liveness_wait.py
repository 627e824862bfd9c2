"""Liveness.wait_alive: a goal waits for the robot's heartbeat before it takes the instance.

A respawned robot process answers its parameter services before every subscriber has heard its
heartbeat; the policy node took the old (or no) instance then, and the episode's first call saw
"the robot process died" (the clean-clone CI's chaos soak: the goal after a robot kill ABORTED).
The real rclpy nodes on a private domain: a heartbeat published late is waited for; none at all
gives False after the timeout, not a hang.
"""

from __future__ import annotations

import threading
import time

import pytest
from ros_fixtures import Spinner

pytestmark = pytest.mark.ros


def test_wait_alive_waits_for_a_late_heartbeat_and_times_out_without_one(ros_context) -> None:
    from rclpy.node import Node

    from captain_ros.ros.liveness import Heartbeat, Liveness

    watcher = Node("liveness_watcher", context=ros_context)
    robot = Node("liveness_robot", context=ros_context)
    spinner = Spinner(ros_context)
    spinner.add(watcher, robot)
    try:
        live = Liveness(watcher, "robot")
        t0 = time.monotonic()
        assert live.wait_alive(0.3) is False
        assert 0.3 <= time.monotonic() - t0 < 2.0
        beats: list[Heartbeat] = []
        threading.Timer(0.5, lambda: beats.append(Heartbeat(robot, "robot"))).start()
        assert live.wait_alive(20.0) is True
        assert live.alive and live.instance == beats[0].instance
        assert live.lost_since(beats[0].instance) is None
    finally:
        spinner.shutdown()
        watcher.destroy_node()
        robot.destroy_node()
