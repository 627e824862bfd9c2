"""Issue 36: a hardware fault on the emulated PiPER, seen through the robot node's interfaces.

The robot node (lifecycle, real services) hosts the PiPER backend on the CAN emulator, in-process
so the test can inject the emulator's faults. Checked: a motor that drops out is a ``hardware``
failure of the motion call with the motor named, and ``/captain/robot/link`` shows it; an
over-current trips the current guard, which latches the robot's e-stop: ``/captain/estop/state``
turns true (the policy node refuses goals on it) and the latch survives loading another scene
(a new backend) until the operator's reset.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter
from ros_fixtures import wait_until
from std_msgs.msg import Bool, String

from captain_ros.core import FailureCategory
from captain_ros.ros.estop import ESTOP_STATE_TOPIC, LATCHED_QOS

pytestmark = pytest.mark.slow


@pytest.fixture
def piper_robot(ros_context: Any, spinner: Any, domain_id: int) -> Any:
    from captain_ros.ros.robot_node import RobotNode
    from captain_ros.ros.runner import bring_up

    robot = RobotNode(context=ros_context, parameter_overrides=[
        Parameter("backend", value="piper"), Parameter("emulate", value=True),
        Parameter("joint_state_rate_hz", value=50.0), Parameter("require_episode", value=False)])  # fmt: skip
    bring_up(robot)
    spinner.add(robot)
    yield robot
    spinner.shutdown()
    robot.trigger_shutdown()


def _emulator(robot: Any) -> Any:
    return robot.backend.inner.inner.emulator  # LockedBackend -> SafeBackend -> PiperBackend


def test_motor_drop_out_and_over_current_through_the_robot_node(
    piper_robot: Any, ros_context: Any, spinner: Any
) -> None:
    robot = piper_robot
    probe = Node("fault_probe", context=ros_context)
    links: list[dict[str, Any]] = []
    states: list[bool] = []
    event = threading.Event()

    def on_link(m: String) -> None:
        links.append(json.loads(m.data))
        event.set()

    def on_state(m: Bool) -> None:
        states.append(m.data)
        event.set()

    probe.create_subscription(String, "/captain/robot/link", on_link, 50)
    probe.create_subscription(Bool, ESTOP_STATE_TOPIC, on_state, LATCHED_QOS)
    spinner.add(probe)
    wait_until(lambda: bool(links) and bool(states), 30.0, event, "link and e-stop state")
    assert states[-1] is False and links[-1]["arms"]["arm"]["enabled"] is True

    emu = _emulator(robot)
    emu.disable_motor("arm", 3)
    wait_until(lambda: links[-1]["arms"]["arm"]["disabled_motors"] == [3], 10.0, event,
               "the dropped-out motor on /captain/robot/link")  # fmt: skip
    r = robot.service.call("move_to", {"jaw": 0.03})
    assert r.failure_category == FailureCategory.HARDWARE and "motor J3 disabled" in r.message
    assert states[-1] is False  # refused before anything moved: nothing latched
    emu.clear_faults()
    robot.backend.inner.enable()  # the operator re-enables (captain hw enable)

    emu.over_current("arm", 2)
    wait_until(lambda: "J2 over-current" in links[-1]["arms"]["arm"]["faults"], 10.0, event,
               "the over-current on /captain/robot/link")  # fmt: skip
    x, y, z = (float(v) for v in robot.backend.ee_pose("arm").position_m)
    r = robot.service.call("move_to", {"position": [x, y, z + 0.02], "arm": "arm"})
    assert r.failure_category == FailureCategory.ESTOP and "J2 over-current" in r.message, r
    wait_until(lambda: states[-1] is True, 10.0, event, "/captain/estop/state true")
    ok, message = robot.load_scene("pick_place", 4)  # another scene: a new backend
    assert ok, message
    assert robot.backend.estopped  # the guard's latch survived the rebuild
    robot.estop.reset()
    assert not robot.backend.estopped
    wait_until(lambda: states[-1] is False, 10.0, event, "/captain/estop/state false")
