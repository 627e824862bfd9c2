"""Recorder node: rosbag2 MCAP bags of the episode topics, one bag per episode.

Subscribes (raw CDR, no deserialization) to every topic matching ``topics`` as publishers appear,
with the publishers' reliability/durability, and stores their offered QoS profiles in the bag.
An ``/captain/episode_events`` ``start`` opens ``<output_dir>/<episode_id>``; ``end`` closes it once
the announced number of receipts has been written (or ``close_grace_s`` passed). Bags are flushed
every ``flush_period_s`` (a crash loses at most that much; see :func:`captain_ros.bags.rosbag2.recover_bag`)
and closed cleanly on shutdown. Status (JSON on ``/captain/recorder/status``, latched): the open
bag, the last closed bag and per-topic counts at the last flush.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from captain_ros_interfaces.msg import EpisodeEvent
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from std_msgs.msg import String

from captain_ros.bags.rosbag2 import BagWriter, make_typestore, qos
from captain_ros.ros.estop import LATCHED_QOS
from captain_ros.ros.params import Param, declare

EPISODE_TOPICS = ("/captain/receipts,/captain/episode_events,/captain/observations,/captain/privileged,"
                  "/captain/detections,/captain/estop/state,/captain/wrench/*,/joint_states,/tf,"
                  "/tf_static,/camera/*/image_raw,/camera/*/camera_info")
PARAMS = (
    Param("output_dir", "runs/bags", "Directory that receives one bag per episode."),
    Param("topics", EPISODE_TOPICS, "Comma-separated topic patterns (fnmatch) to record."),
    Param("flush_period_s", 1.0, "Flush (close chunk + fsync) period [s].", 0.05, 60.0),
    Param("discovery_period_s", 0.25, "Period of the topic discovery scan [s].", 0.05, 10.0),
    Param("drain_topics", "/joint_states,/tf,/captain/wrench/*", "Comma-separated patterns of the "
          "periodic state topics that must deliver a sample published after 'end' before the bag "
          "closes."),
    Param("close_grace_s", 5.0, "Longest wait after 'end' for late receipts and for the state "
          "topics to deliver samples published after it [s].", 0.0, 60.0),
)


class RecorderNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("captain_recorder", **kwargs)
        self.p = declare(self, PARAMS)
        self.patterns = [t.strip() for t in self.p["topics"].split(",") if t.strip()]
        self.typestore = make_typestore()
        self.bag: BagWriter | None = None
        self.episode_id = ""
        self.last_closed = ""
        self._closing: tuple[int, float, int, set[str]] | None = None  # receipts, deadline, end, topics
        self._last_source_ns: dict[str, int] = {}
        self._first_source_ns: dict[str, int] = {}
        self._latched: dict[str, tuple[str, Any, bytes]] = {}  # re-written at each bag start
        self._types: dict[str, tuple[str, Any]] = {}
        self._lock = threading.RLock()
        group = MutuallyExclusiveCallbackGroup()
        self.status_pub = self.create_publisher(String, "/captain/recorder/status", LATCHED_QOS)
        self.create_subscription(EpisodeEvent, "/captain/episode_events", self._on_event, 100,
                                 callback_group=group)
        self.create_timer(self.p["discovery_period_s"], self._discover, callback_group=group)
        self.create_timer(self.p["flush_period_s"], self.flush, callback_group=group)
        self._discover()
        self._status()

    # --- subscriptions --------------------------------------------------------------------------
    def _discover(self) -> None:
        for topic, types in self.get_topic_names_and_types():
            if topic in self._types or topic == "/captain/episode_events" or not any(fnmatch.fnmatch(topic, p) for p in self.patterns):
                continue
            msgtype = types[0]
            pkg, _, name = msgtype.split("/")
            cls = getattr(importlib.import_module(f"{pkg}.msg"), name)
            infos = self.get_publishers_info_by_topic(topic)
            reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
            latched = any(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
            # deep reader queues: a flush (fsync) stall must not overflow KEEP_LAST and drop data
            big = msgtype in ("sensor_msgs/msg/Image", "sensor_msgs/msg/PointCloud2")
            depth = max([i.qos_profile.depth for i in infos] + [50 if big else 1000])
            sub_qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE if reliable
                                 else ReliabilityPolicy.BEST_EFFORT,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
                                 else DurabilityPolicy.VOLATILE)
            self._types[topic] = (msgtype, qos(depth, reliable=reliable, transient_local=latched))
            self.create_subscription(cls, topic, functools.partial(self._on_raw, topic), sub_qos,
                                     raw=True)
            self.get_logger().debug(f"recording {topic} [{msgtype}]")

    def _on_raw(self, topic: str, data: bytes, info: Any) -> None:
        """Write one serialized message, stamped with its reception time (rosbag2's default)."""
        msgtype, q = self._types[topic]
        with self._lock:
            src = int(info["source_timestamp"])
            self._last_source_ns[topic] = src
            self._first_source_ns.setdefault(topic, src)
            if q.durability.name == "TRANSIENT_LOCAL":
                self._latched[topic] = (msgtype, q, data)
            if self.bag is not None:
                self._write(topic, msgtype, q, data, int(info["received_timestamp"]))
                if self._closing is not None:
                    self._maybe_close()

    def _write(self, topic: str, msgtype: str, q: Any, data: bytes, stamp_ns: int | None = None) -> None:
        assert self.bag is not None
        if not self.bag.has_topic(topic):
            self.bag.add_topic(topic, msgtype, [q])
        self.bag.write(topic, stamp_ns or time.time_ns(), data)

    # --- episodes -------------------------------------------------------------------------------
    def _on_event(self, ev: EpisodeEvent, info: Any) -> None:
        with self._lock:
            if ev.event == "start":
                self.close_bag()
                self.open_bag(ev.episode_id)
            if self.bag is None or ev.episode_id != self.episode_id:
                return
            self._write("/captain/episode_events", "captain_ros_interfaces/msg/EpisodeEvent",
                        qos(100), serialize_message(ev))
            if ev.event == "end":
                detail = json.loads(ev.detail_json or "{}")
                # drain: periodic state topics must deliver a sample published after the end
                drain = [p.strip() for p in self.p["drain_topics"].split(",") if p.strip()]
                periodic = {t for t, n in self.bag.counts.items() if n >= 10 and self._rate_hz(t) >= 2.0
                            and any(fnmatch.fnmatch(t, p) for p in drain)}
                self._closing = (int(detail.get("calls", 0)), time.monotonic() + self.p["close_grace_s"],
                                 int(info["source_timestamp"]), periodic)
                self._maybe_close()

    def _rate_hz(self, topic: str) -> float:
        """Mean publishing rate of ``topic`` in the open bag [Hz] (from source timestamps)."""
        span_ns = self._last_source_ns.get(topic, 0) - self._first_source_ns.get(topic, 0)
        return (self.bag.counts[topic] - 1) / (span_ns * 1e-9) if self.bag and span_ns > 0 else 0.0

    def open_bag(self, episode_id: str) -> None:
        path = Path(self.p["output_dir"]) / (episode_id or time.strftime("%Y%m%d_%H%M%S"))
        self.bag = BagWriter(path, self.typestore)
        self.episode_id = episode_id
        self._first_source_ns = {}
        for topic, (msgtype, q, data) in self._latched.items():
            self._write(topic, msgtype, q, data)
        self.get_logger().info(f"recording episode {episode_id} to {path}")
        self._status()

    def _maybe_close(self) -> None:
        if self._closing is None or self.bag is None:
            return
        expected, deadline, end_ns, periodic = self._closing
        drained = all(self._last_source_ns.get(t, 0) >= end_ns for t in periodic)
        if (self.bag.counts["/captain/receipts"] >= expected and drained) or time.monotonic() >= deadline:
            self.close_bag()

    def close_bag(self) -> None:
        with self._lock:
            if self.bag is not None:
                self.bag.close()
                self.last_closed = str(self.bag.path)
                self.get_logger().info(f"closed bag {self.bag.path} {dict(self.bag.counts)}")
            self.bag, self._closing, self.episode_id = None, None, ""
        self._status()

    def flush(self) -> None:
        with self._lock:
            self._maybe_close()
            if self.bag is not None:
                self.bag.flush()
                self._status()

    def _status(self) -> None:
        if not self.context.ok():  # shutting down: the bag is closed, nobody to tell
            return
        self.status_pub.publish(String(data=json.dumps({
            "open": str(self.bag.path) if self.bag else "", "episode_id": self.episode_id,
            "flushed": dict(self.bag.counts) if self.bag else {}, "last_closed": self.last_closed})))

    def destroy_node(self) -> None:
        self.close_bag()
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [RecorderNode()])


if __name__ == "__main__":
    raise SystemExit(main())
