"""The recorder's view of one episode: the policy node's episode events and the counts behind them.

An episode is the window between its ``start`` and ``end`` events (their stamps,
``/captain/episode_events``); the recorder puts every message stamped inside it into the
episode's bag. After ``end`` the ``counts`` event says how many messages every node of the graph
published in the window (their ``published_counts`` services), so the recorder knows when the bag
is complete. A lost episode (its robot process died, the policy node stops) sends no counts: its
``end`` event carries ``aborted`` with the reason, and the recorder closes the bag at once, marked
incomplete (a dead node would otherwise hold it open until its timeout).
"""

from __future__ import annotations

import json
import time
from typing import Any

from builtin_interfaces.msg import Time
from captain_ros_interfaces.msg import EpisodeEvent
from captain_ros_interfaces.srv import PublishedCounts
from rclpy.node import Node

from captain_ros.ros.calls import call_sync

COUNTS_SETTLE_S = 0.2
"""Between the end stamp and asking the nodes what they published in the window [s]: a message
stamped just before it may still be on its way out of a busy node."""


class EpisodeWindow:
    """Publishes the episode events of ``node`` on ``event_pub``; ``publish_log`` counts the
    node's own messages."""

    def __init__(self, node: Node, event_pub: Any, publish_log: Any) -> None:
        self.node = node
        self.event_pub = event_pub
        self.publish_log = publish_log
        self.counts_clients: dict[str, Any] = {}

    def event(
        self, episode_id: str, event: str, detail: dict[str, Any], stamp_ns: int | None = None
    ) -> int:
        """Publish an episode event stamped ``stamp_ns`` (now by default); returns the stamp."""
        at = time.time_ns() if stamp_ns is None else stamp_ns
        sec, nanosec = divmod(at, 1_000_000_000)
        self.event_pub.publish(
            EpisodeEvent(
                stamp=Time(sec=sec, nanosec=nanosec),
                episode_id=episode_id,
                event=event,
                detail_json=json.dumps(detail),
            )
        )
        return at

    def close(self, episode_id: str, calls: int, start_ns: int, lost: str | None) -> None:
        """End the window: ``end``, then (unless ``lost``) ``counts``."""
        detail: dict[str, Any] = {"calls": calls, **({"aborted": lost} if lost else {})}
        end_ns = self.event(episode_id, "end", detail)
        if lost is None:
            time.sleep(COUNTS_SETTLE_S)  # messages stamped before end_ns are published by now
            self.event(
                episode_id,
                "counts",
                {"calls": calls, "published": self.published(start_ns, end_ns)},
                end_ns,
            )

    def published(self, start_ns: int, end_ns: int) -> dict[str, int]:
        """Messages per topic every node of the graph published in [start_ns, end_ns] (their
        ``published_counts`` services), for the recorder's completeness check."""
        node = self.node
        counts = dict(self.publish_log.counts(start_ns, end_ns))
        own = f"/{node.get_name()}/published_counts"
        for name, _types in node.get_service_names_and_types():
            if not name.endswith("/published_counts") or name == own:
                continue
            client = self.counts_clients.get(name) or node.create_client(PublishedCounts, name)
            self.counts_clients[name] = client
            resp = call_sync(client, PublishedCounts.Request(start_ns=start_ns, end_ns=end_ns), 5.0)
            if resp is None:
                node.get_logger().warning(
                    f"{name} did not answer: the bag's completeness is unchecked"
                )
                continue
            for topic, n in json.loads(resp.counts_json).items():
                counts[topic] = counts.get(topic, 0) + int(n)
        return counts
