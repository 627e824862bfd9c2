"""Recorder node: one rosbag2 MCAP bag per episode that loses nothing and mixes nothing up.

Subscribes (raw CDR) to every topic matching ``topics`` as publishers appear, with the
publishers' reliability/durability and deep reader queues, and stores their offered QoS profiles
in the bag. Which bag a message goes to is decided by its stamp against the episode's window
(:mod:`captain_ros.bags.recording`): the policy node's ``start`` event opens the window, its
``end`` event ends it and the ``counts`` event that follows says how many messages every node
published in it, so the bag closes as soon as it holds them all, or after ``close_grace_s``
marked incomplete (the missing counts in the status). Which topics are read, and with which QoS:
:mod:`captain_ros.ros.recorder_topics`.

Crash safety: the bag is flushed (MCAP chunk closed + fsync) every ``flush_period_s``, so a
SIGKILL loses at most that much; at start the node recovers every unclosed bag left in
``output_dir`` (:mod:`captain_ros.bags.recovery`: readable again by rosbags and mcap readers),
and the launch file respawns it.
When the policy process dies (:mod:`captain_ros.ros.liveness`), the episodes it left open end
at once, their bags marked incomplete.
Status (JSON on ``/captain/recorder/status``, latched): this instance, the open bags, the last
closed bags with their completeness, and the bags recovered at start.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any

from captain_ros_interfaces.msg import EpisodeEvent
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.serialization import serialize_message
from std_msgs.msg import String

from captain_ros.bags.episodes import ClosedBag, stamp_of_cdr
from captain_ros.bags.recording import Recording
from captain_ros.bags.recovery import recover_unclosed
from captain_ros.ros.estop import LATCHED_QOS
from captain_ros.ros.liveness import Liveness
from captain_ros.ros.params import declare
from captain_ros.ros.recorder_params import EVENTS_TOPIC, PARAMS
from captain_ros.ros.recorder_topics import ReaderQos, TopicSelection, message_class, reader_qos


def stamp_ns(t: Any) -> int:
    return int(t.sec) * 1_000_000_000 + int(t.nanosec)


class RecorderNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("captain_recorder", **kwargs)
        self.p = declare(self, PARAMS)
        self.topics = TopicSelection(self.p["topics"], excluded=[EVENTS_TOPIC])
        self.instance = f"{os.getpid()}-{time.time_ns()}"
        self._started_s = time.monotonic()
        self.recording = Recording(
            self.p["output_dir"],
            events_topic=EVENTS_TOPIC,
            close_grace_s=self.p["close_grace_s"],
            hold_s=self.p["hold_s"],
            flush_period_s=self.p["flush_period_s"],
            buffer_s=self.p["buffer_s"],
            on_open=lambda ep, path: self.get_logger().info(f"recording episode {ep} to {path}"),
        )
        self.recovered = self._recover_crashed()
        self._readers: dict[str, ReaderQos] = {}
        self._subs: dict[str, Any] = {}
        group = MutuallyExclusiveCallbackGroup()
        self.status_pub = self.create_publisher(String, "/captain/recorder/status", LATCHED_QOS)
        self.create_subscription(
            EpisodeEvent, EVENTS_TOPIC, self._on_event, 100, callback_group=group
        )
        self.create_timer(self.p["discovery_period_s"], self._discover, callback_group=group)
        self.create_timer(self.p["flush_period_s"], self.flush, callback_group=group)
        self.policy_alive = Liveness(self, "policy", group, on_lost=self._on_policy_lost)
        self.robot_alive = Liveness(self, "robot", group)
        self._discover()
        self._status()

    def _recover_crashed(self) -> list[str]:
        """Make every unclosed bag in ``output_dir`` (a crashed recorder's) readable again."""
        done = recover_unclosed(self.p["output_dir"])
        for r in done:
            if r.ok:
                self.get_logger().warning(
                    f"recovered the unclosed bag {r.path} (a recorder crashed)"
                )
            else:
                self.get_logger().error(f"cannot recover {r.path}: {r.error}")
        return [r.path for r in done if r.ok]

    # --- subscriptions --------------------------------------------------------------------------
    def _discover(self) -> None:
        for topic, types in self.get_topic_names_and_types():
            if topic in self._readers or topic not in self.topics:
                continue
            infos = self.get_publishers_info_by_topic(topic)
            if not infos:  # known only from a subscriber: its publishers decide the QoS (a
                continue  # latched topic subscribed volatile lost its state; the chaos soak)
            reader = reader_qos(types[0], [i.qos_profile for i in infos])
            self._readers[topic] = reader
            self._subs[topic] = self.create_subscription(
                message_class(reader.msgtype),
                topic,
                functools.partial(self._on_raw, topic),
                reader.profile(),
                raw=True,
            )
            self.get_logger().debug(f"recording {topic} [{reader.msgtype}]")

    def _on_raw(self, topic: str, data: bytes, info: Any) -> None:
        r = self._readers[topic]
        stamp = stamp_of_cdr(r.msgtype, data) or int(info["source_timestamp"])  # 0: unset
        self._closed(self.recording.message(topic, r.msgtype, r.offered, data, stamp, r.latched))

    # --- episodes -------------------------------------------------------------------------------
    def _on_event(self, ev: EpisodeEvent) -> None:
        data = serialize_message(ev)
        at = stamp_ns(ev.stamp)
        self._closed(self.recording.event(ev.episode_id, ev.event, ev.detail_json, at, data))
        self._status()

    def _on_policy_lost(self, instance: str) -> None:
        """The policy process died: the episodes it left open end now, their bags incomplete
        (else they would grow until this recorder stops)."""
        for episode_id in self.recording.end_unended(time.time_ns()):
            self.get_logger().warning(
                f"the policy process {instance} died during episode "
                f"{episode_id}: closing its bag (incomplete)"
            )

    def _closed(self, bags: list[ClosedBag]) -> None:
        for b in bags:
            # one call site per severity: rclpy refuses a call site that changes severity
            if b.complete:
                self.get_logger().info(f"closed bag {b.path} (complete)")
            else:
                self.get_logger().warning(f"closed bag {b.path} (INCOMPLETE, missing {b.missing})")
        if bags:
            self._status()

    def flush(self) -> None:
        self._closed(self.recording.flush())
        self._status()

    def _status(self) -> None:
        if not self.context.ok():  # shutting down: the bags are closed, nobody to tell
            return
        status = {
            "instance": self.instance,
            **self.recording.status(),
            "recovered": self.recovered,
            # read before "ready": a robot heard in between makes "ready" false, never
            # names a robot it was not computed for
            "robot": self.robot_alive.instance,
            "ready": self.ready(),
        }
        self.status_pub.publish(String(data=json.dumps(status)))

    def ready(self) -> bool:
        """Every recorded topic in the graph is subscribed and matched to all its publishers, so
        nothing published from now on can be missed; never within ``discovery_settle_s`` of the
        start, while the graph this process knows may still lack publishers, nor within it of
        hearing a new robot process (a respawn: its publishers may not be discovered yet, and a
        goal sent at once lost each robot topic's first message, found by the chaos soak)."""
        now, settle = time.monotonic(), self.p["discovery_settle_s"]
        robot = self.robot_alive
        if now - self._started_s < settle or (robot.instance and now - robot.heard_at < settle):
            return False
        for topic, _types in self.get_topic_names_and_types():
            if topic not in self.topics:
                continue
            publishers = self.count_publishers(topic)
            if publishers == 0:  # a topic only subscribed to: nothing to miss yet
                continue
            sub = self._subs.get(topic)
            if sub is None or sub.get_publisher_count() < publishers:
                return False
        return True

    def destroy_node(self) -> None:
        self._closed(self.recording.close_all())
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [RecorderNode()])


if __name__ == "__main__":
    raise SystemExit(main())
