"""Emergency stop over ROS: a topic and services that latch the backend's e-stop.

* ``/captain/estop`` (``std_msgs/Bool``): ``true`` halts now and latches; ``false`` is ignored
  (a reset must be a deliberate service call).
* ``/captain/estop/trigger`` and ``/captain/estop/reset`` (``std_srvs/Trigger``).
* ``/captain/estop/state`` (``std_msgs/Bool``, transient local): the latched state.

In the secured graph (``secure``) the plain reset is refused; the robot node releases the latch
through its signed command service (:mod:`captain_ros.ros.secure`). Triggering stays open.

The callbacks run in their own mutually exclusive callback group, so with a multi-threaded
executor they are served while a motion call is executing. :meth:`Backend.estop` is called
without taking the backend lock: the backend halts and the motion loop's next control tick sees
the latch (``servo`` raises :class:`~captain_ros.core.errors.EStopError`), so motion stops within
one control tick.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

ESTOP_TOPIC = "/captain/estop"
ESTOP_STATE_TOPIC = "/captain/estop/state"
ESTOP_TRIGGER_SRV = "/captain/estop/trigger"
ESTOP_RESET_SRV = "/captain/estop/reset"
LATCHED_QOS = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)


class EStopInterface:
    """Attach the e-stop topic/services to ``node``; ``engage``/``release`` act on the backend.

    Args:
        node: Node that owns the interfaces.
        engage: Halts and latches (e.g. ``backend.estop``); called with a reason string.
        release: Releases the latch (e.g. ``backend.reset_estop``).
        is_latched: Reads the latched state (e.g. ``lambda: backend.estopped``).
    """

    def __init__(
        self,
        node: Node,
        engage: Callable[[str], None],
        release: Callable[[], None],
        is_latched: Callable[[], bool],
        secure: bool = False,
    ) -> None:
        self._node = node
        self.secure = secure  # the plain reset is refused: only the signed one releases
        self._engage, self._release, self._is_latched = engage, release, is_latched
        self._lock = threading.Lock()
        self.group = MutuallyExclusiveCallbackGroup()
        from captain_ros.ros.publish_log import create_publisher

        self._state_pub = create_publisher(node, Bool, ESTOP_STATE_TOPIC, LATCHED_QOS)
        self._sub = node.create_subscription(
            Bool, ESTOP_TOPIC, self._on_topic, 10, callback_group=self.group
        )
        self._trigger = node.create_service(
            Trigger, ESTOP_TRIGGER_SRV, self._on_trigger, callback_group=self.group
        )
        self._reset = node.create_service(
            Trigger, ESTOP_RESET_SRV, self._on_reset, callback_group=self.group
        )
        self.publish_state()

    def trigger(self, reason: str) -> None:
        with self._lock:
            self._engage(reason)
        self._node.get_logger().warning(f"E-STOP engaged: {reason}")
        self.publish_state()

    def reset(self) -> None:
        with self._lock:
            self._release()
        self._node.get_logger().info("e-stop reset")
        self.publish_state()

    def publish_state(self) -> None:
        self._state_pub.publish(Bool(data=bool(self._is_latched())))

    def _on_topic(self, msg: Bool) -> None:
        if msg.data:
            self.trigger(f"{ESTOP_TOPIC} message")

    def _on_trigger(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        self.trigger(f"{ESTOP_TRIGGER_SRV} service")
        resp.success, resp.message = True, "e-stop engaged and latched; call reset to release"
        return resp

    def _on_reset(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        if self.secure:
            self._node.get_logger().warning(f"refused an uncredentialed {ESTOP_RESET_SRV}")
            resp.success = False
            resp.message = (
                "reset refused: the graph is secured; the reset needs a credential "
                "(captain ros estop-reset --key-file KEY; docs/ros.md)"
            )
            return resp
        return self.signed_reset(_req, resp)

    def signed_reset(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        """The reset itself (the secured graph calls it once the credential is checked)."""
        try:
            self.reset()
        except Exception as exc:  # a backend may refuse (e.g. hardware fault still present)
            resp.success, resp.message = False, f"reset refused: {exc}"
            return resp
        resp.success, resp.message = True, "e-stop released; motion allowed again"
        return resp

    def destroy(self) -> None:
        for ent in (self._sub,):
            self._node.destroy_subscription(ent)
        for srv in (self._trigger, self._reset):
            self._node.destroy_service(srv)
        self._node.destroy_publisher(self._state_pub)
