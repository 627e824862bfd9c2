"""Liveness.wait_alive: a goal waits for the robot's heartbeat before it takes the instance.

A respawned robot process answers its parameter services before every subscriber has heard its
heartbeat; the policy node took the old (or no) instance then, and the episode's first call saw
"the robot process died" (the clean-clone CI's chaos soak: the goal after a robot kill ABORTED).
The real rclpy nodes on a private domain: a heartbeat published late is waited for; none at all
gives False after the timeout, not a hang.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from ros_fixtures import ChildProcess, Spinner, wait_until

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


def _beating(domain_id: int, name: str) -> tuple[ChildProcess, str]:
    child = ChildProcess(
        [str(Path(__file__).with_name("heartbeat_child.py")), "robot"], domain_id, name
    )
    wait_until(lambda: child.output().strip() != "", 60.0, what=f"{name}'s instance id")
    return child, child.output().split()[0]


def test_a_new_writer_is_not_alive_until_its_instance_is_heard(ros_context, domain_id) -> None:
    """Real processes: a heartbeat SIGKILLed and another started. After a loss the old instance
    is forgotten, so a respawned writer's liveliness alone (its id not yet heard) is not "alive"
    and a goal cannot take the dead instance for the live one (the 200-goal soak: two quiet goals
    right after a robot kill ended robot_lost). The heartbeat repeats every lease, so a watcher
    that took a live writer for lost (a starved process) hears its id again."""
    from rclpy.node import Node

    from captain_ros.ros.liveness import LEASE_S, Liveness

    watcher = Node("liveness_watcher2", context=ros_context)
    spinner = Spinner(ros_context)
    spinner.add(watcher)
    children = []
    try:
        lost: list[str] = []
        live = Liveness(watcher, "robot", on_lost=lost.append)
        first, old = _beating(domain_id, "beat_a")
        children.append(first)
        assert live.wait_alive(30.0) and live.instance == old
        first.stop(signal.SIGKILL)
        wait_until(lambda: not live.alive, 10.0, what="the loss")
        assert lost == [old] and live.instance == ""
        # the middleware's word that a writer is back, before its id arrives (the race)
        live._on_liveliness(SimpleNamespace(alive_count=1))
        assert not live.alive and live.lost_since(old) == f"the robot process {old} died"
        second, new = _beating(domain_id, "beat_b")
        children.append(second)
        assert live.wait_alive(30.0) and live.instance == new != old
        assert live.lost_since(old) == f"the robot process {old} died and was replaced by {new}"
        # a live writer taken for lost: its id comes again with the next beat
        live._on_liveliness(SimpleNamespace(alive_count=0))
        assert not live.alive
        t0 = time.monotonic()
        assert live.wait_alive(10.0) and live.instance == new
        assert time.monotonic() - t0 < 3 * LEASE_S + 2.0
    finally:
        for c in children:
            c.stop(signal.SIGKILL)
        spinner.shutdown()
        watcher.destroy_node()
