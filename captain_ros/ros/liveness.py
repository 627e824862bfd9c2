"""Which node processes are alive: DDS liveliness on one latched topic per node.

A crashed process (SIGKILL, a segfault) says nothing on its way out. Each long-lived node of the
graph therefore publishes its instance id (``<pid>-<start ns>``) on ``/captain/alive/<role>``
with DDS ``AUTOMATIC`` liveliness and a lease of :data:`LEASE_S`: the middleware itself asserts
the writer's liveliness while the process lives, and every subscriber is told (its liveliness
callback) within about one lease after the process is gone. A respawned process publishes a new
instance id, so a watcher also tells "died and came back" from "still the same".

Who watches whom (docs/ros.md, "When a node dies"):

- the policy node watches the robot process: robot calls of the running episode are refused at
  once and the goal ends (``robot_lost``) instead of waiting for a call timeout;
- the robot node watches the policy node: the episode gate closes (no further robot calls; the
  arm holds where the last call left it);
- the recorder watches the policy node: the dead episode's bag is closed, marked incomplete;
- ``captain ros goal`` watches the policy node: a goal whose server died ends with a clear failure.

A node that watches a role served by its own process (`captain up`: one process, every node)
ignores liveliness losses of that writer: a process cannot outlive its own death.

Liveliness says the process is alive, not that it is well: a process hung in Python still looks
alive (its DDS threads keep asserting it).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from rclpy.duration import Duration
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

LEASE_S = 1.0
"""Liveliness lease [s]: a dead process is noticed about this long after it died (measured
0.97 s on this VM between SIGKILL and the watcher's callback)."""

ALIVE_QOS = QoSProfile(
    depth=1,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    reliability=ReliabilityPolicy.RELIABLE,
    liveliness=LivelinessPolicy.AUTOMATIC,
    liveliness_lease_duration=Duration(seconds=LEASE_S),
)


def alive_topic(role: str) -> str:
    """``/captain/alive/<role>`` (``robot``, ``policy``)."""
    return f"/captain/alive/{role}"


class Heartbeat:
    """Publishes this process's instance id on :func:`alive_topic` ``(role)`` (latched)."""

    def __init__(self, node: Node, role: str) -> None:
        self.instance = f"{os.getpid()}-{time.time_ns()}"
        self.pub = node.create_publisher(String, alive_topic(role), ALIVE_QOS)
        self.pub.publish(String(data=self.instance))
        # again every lease: a watcher that took a live writer for lost (a process starved past
        # the lease) forgets its instance, and hears it again here (Liveness.alive)
        self.timer = node.create_timer(
            LEASE_S, lambda: self.pub.publish(String(data=self.instance))
        )


class Liveness:
    """Follows one role's heartbeat.

    Attributes:
        alive: A process of the role is alive now and its instance id is known (a property).
        instance: The instance id of the live process ("" before any, and from a loss until the
            next process's id is heard).
        changed: Set on every change (death, a new instance); waiters clear it.

    ``on_lost(instance)`` is called (on the executor thread) when the last live writer is lost.
    """

    def __init__(
        self,
        node: Node,
        role: str,
        callback_group: Any = None,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        self.role = role
        self._writer_alive = False  # DDS: a writer of the role's topic holds its liveliness
        self.instance = ""
        self.lost_at = 0.0  # time.monotonic() of the last loss
        self.heard_at = 0.0  # time.monotonic() when the current instance id was first heard
        self.changed = threading.Event()
        self.on_lost = on_lost
        self._sub = node.create_subscription(
            String,
            alive_topic(role),
            self._on_instance,
            ALIVE_QOS,
            callback_group=callback_group,
            event_callbacks=SubscriptionEventCallbacks(liveliness=self._on_liveliness),
        )

    @property
    def alive(self) -> bool:
        """A process of the role is alive and its instance id has been heard. A respawned
        writer's liveliness can reach this reader before its instance id does; until then the
        old (dead) instance is not taken for the live one (the chaos soak's goals right after a
        robot kill once started with the dead instance and ended ``robot_lost``)."""
        return self._writer_alive and bool(self.instance)

    def _on_instance(self, msg: String) -> None:
        fresh = str(msg.data) != self.instance or not self._writer_alive
        if str(msg.data) != self.instance:
            self.heard_at = time.monotonic()
        self.instance, self._writer_alive = str(msg.data), True
        if fresh:  # the heartbeat repeats every lease; only news wakes the waiters
            self.changed.set()

    def _on_liveliness(self, event: Any) -> None:
        if self.instance.startswith(f"{os.getpid()}-"):
            # the watched node runs in this very process (`captain up` hosts the whole graph in
            # one): it cannot have died while this callback runs. DDS reports the writer's
            # liveliness as lost here (seen with Fast DDS within one participant); ignore it.
            return
        was = self._writer_alive
        self._writer_alive = int(event.alive_count) > 0
        if was and not self._writer_alive:
            lost, self.instance = self.instance, ""  # the next writer is known by its own id
            self.lost_at = time.monotonic()
            self.changed.set()
            if self.on_lost is not None:
                self.on_lost(lost)

    def wait_alive(self, timeout_s: float) -> bool:
        """Block until a process of the role is alive (its heartbeat heard), at most
        ``timeout_s``. A respawned process answers its services before every subscriber has
        heard its heartbeat: a watcher that starts an episode must wait for it, or it would
        take the new process for the dead one."""
        deadline = time.monotonic() + timeout_s
        while not self.alive:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, 0.02))
        return True

    def lost_since(self, instance: str) -> str | None:
        """Why the process ``instance`` is no longer the live one (None: it still is)."""
        if not self.alive:
            return f"the {self.role} process {instance or '?'} died"
        if instance and self.instance != instance:
            return f"the {self.role} process {instance} died and was replaced by {self.instance}"
        return None
