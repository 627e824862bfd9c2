"""The coordinator's humanoid client against a controller that joins the graph late.

A service request sent before the client has matched its server is dropped, not queued (Fast DDS,
volatile), so the CoEvolve node's first call after start-up (``load_scene``) once waited out its
whole 30 s timeout on a loaded CI machine and aborted the goal as ``invalid_goal``. ``call_sync``
(every client's) now waits for the server before sending; with no server at all the humanoid
client says so.
"""

from __future__ import annotations

import threading
import time

import pytest
from rclpy.node import Node

from captain_ros.ros.humanoid_client import RosBridgeError, RosHumanoidBridge
from captain_ros.ros.humanoid_node import HumanoidNode

pytestmark = pytest.mark.slow


def test_a_call_made_before_the_controller_joins_is_answered_once_it_does(ros_context, spinner):
    node = Node("coordinator", context=ros_context)
    spinner.add(node)
    bridge = RosHumanoidBridge(node, timeout_s=20.0)
    outcome: dict = {}

    def load() -> None:
        try:
            bridge.load_scene("base", 7)
            outcome["ok"] = True
        except RosBridgeError as exc:
            outcome["error"] = str(exc)

    caller = threading.Thread(target=load)
    caller.start()
    time.sleep(1.5)  # the request is issued while nothing serves it
    controller = HumanoidNode(context=ros_context)
    spinner.add(controller)
    caller.join(30.0)
    assert outcome == {"ok": True}
    with controller.lock:
        assert controller.bridge.privileged_state()["time_s"] >= 0.0


def test_with_no_controller_the_call_says_nothing_serves_it(ros_context, spinner):
    node = Node("coordinator", context=ros_context)
    spinner.add(node)
    bridge = RosHumanoidBridge(node, timeout_s=2.0)
    with pytest.raises(RosBridgeError, match="load_scene is not served"):
        bridge.load_scene("base", 7)
