"""What a node published, and when: the ground truth a bag is checked against.

Every node that publishes recorded topics creates its publishers through one :class:`PublishLog`,
which remembers the stamp of every message per topic (its header stamp, the one the recorder
windows by; the publish time [ns, system clock] for messages without one) and serves ``/<node>/published_counts``
(``captain_ros_interfaces/srv/PublishedCounts``): the number of messages per topic published in a
time window. At the end of an episode the policy node asks every node for its counts in the
episode's window and hands them to the recorder with the ``end`` event, so the recorder knows
when its bag is complete and says so when it is not.

Memory is bounded: stamps older than ``keep_s`` are dropped (an episode is far shorter), and the
rest are kept as 8-byte integers (:class:`~captain_ros.bags.stamp_log.StampLog`).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from captain_ros_interfaces.srv import PublishedCounts
from rclpy.node import Node

from captain_ros.bags.episodes import stamp_of_message
from captain_ros.bags.stamp_log import StampLog

KEEP_S = 3600.0


class CountingPublisher:
    """A publisher that logs each ``publish`` (same interface as rclpy's for ``publish``)."""

    def __init__(self, inner: Any, topic: str, log: PublishLog) -> None:
        self.inner = inner
        self.topic = topic
        self._log = log

    def publish(self, msg: Any) -> None:
        stamp = stamp_of_message(msg)  # the recorder windows by this same stamp (0 = unset)
        self._log.record(self.topic, stamp or time.time_ns())
        self.inner.publish(msg)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class PublishLog:
    """Publish times per topic of one node, and the service that counts them."""

    def __init__(self, node: Node, keep_s: float = KEEP_S, callback_group: Any = None) -> None:
        self.node = node
        self.keep_ns = int(keep_s * 1e9)
        self._stamps = StampLog(self.keep_ns)
        self._lock = threading.Lock()
        self.srv = node.create_service(
            PublishedCounts,
            f"/{node.get_name()}/published_counts",
            self._on_counts,
            callback_group=callback_group,
        )

    def publisher(self, msg_type: Any, topic: str, qos: Any, **kw: Any) -> CountingPublisher:
        """``node.create_publisher`` whose messages are logged."""
        return CountingPublisher(
            self.node.create_publisher(msg_type, topic, qos, **kw), topic, self
        )

    def record(self, topic: str, stamp_ns: int) -> None:
        with self._lock:
            self._stamps.record(topic, stamp_ns)

    def counts(self, start_ns: int, end_ns: int) -> dict[str, int]:
        """Messages per topic published in ``[start_ns, end_ns]``."""
        with self._lock:
            return self._stamps.counts(start_ns, end_ns)

    def _on_counts(
        self, req: PublishedCounts.Request, resp: PublishedCounts.Response
    ) -> PublishedCounts.Response:
        resp.counts_json = json.dumps(self.counts(int(req.start_ns), int(req.end_ns)))
        return resp


def create_publisher(node: Node, msg_type: Any, topic: str, qos: Any, **kw: Any) -> Any:
    """A publisher of ``node`` that is logged when the node has a ``publish_log``."""
    log = getattr(node, "publish_log", None)
    if isinstance(log, PublishLog):
        return log.publisher(msg_type, topic, qos, **kw)
    return node.create_publisher(msg_type, topic, qos, **kw)
