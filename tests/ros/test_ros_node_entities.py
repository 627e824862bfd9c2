"""What a lifecycle transition created is released again (captain_ros.ros.node_entities): every
kind of entity, and the robot node's configure that fails halfway (it once destroyed only its
publishers, and a second configure served its services twice)."""

from __future__ import annotations

from typing import Any

from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.node import Node
from std_msgs.msg import String
from std_srvs.srv import Trigger

from captain_ros.backends.fake import FakeBackend
from captain_ros.ros.calls import ROBOT_CALL_SRV
from captain_ros.ros.node_entities import created_since, destroy_entities, node_entities


def test_every_kind_created_since_is_destroyed(ros_context: Any) -> None:
    node = Node("entities", context=ros_context)
    before = node_entities(node)
    pub = node.create_publisher(String, "/entities/out", 1)
    sub = node.create_subscription(String, "/entities/in", lambda _m: None, 1)
    srv = node.create_service(Trigger, "/entities/srv", lambda _q, r: r)
    created = created_since(node, before)
    assert set(map(id, created)) == {id(pub), id(sub), id(srv)}
    destroy_entities(node, created)
    assert created_since(node, before) == []
    assert node_entities(node) == before  # what existed before is kept
    node.destroy_node()


class FirstReadFails(FakeBackend):
    """A rig whose first ground-truth read fails (a driver still starting up)."""

    reads = 0

    def privileged_state(self) -> Any:
        self.reads += 1
        if self.reads == 1:
            raise RuntimeError("the driver is not up yet")
        return super().privileged_state()


def test_a_configure_that_fails_halfway_leaves_nothing_served(ros_context: Any) -> None:
    from captain_ros.ros.robot_node import RobotNode
    from captain_ros.tasks import get_task

    robot = RobotNode(
        backend=FirstReadFails(scene=get_task("pick_place").sample(1)), context=ros_context
    )
    before = {s.service_name for s in robot.services}
    assert robot.trigger_configure() == TransitionCallbackReturn.FAILURE
    assert "the driver is not up yet" in robot.last_error
    assert {s.service_name for s in robot.services} == before  # the call server is gone too
    assert robot.trigger_configure() == TransitionCallbackReturn.SUCCESS
    served = [s.service_name for s in robot.services]
    assert served.count(ROBOT_CALL_SRV) == 1, served
    robot.trigger_shutdown()
    robot.destroy_node()
