"""Recorder node: one rosbag2 MCAP bag per episode that loses nothing and mixes nothing up.

Subscribes (raw CDR) to every topic matching ``topics`` as publishers appear, with the
publishers' reliability/durability and deep reader queues, and stores their offered QoS profiles
in the bag. Which bag a message goes to is decided by its stamp against the episode's window
(:mod:`captain_ros.bags.episodes`): the policy node's ``start`` event opens the window, its
``end`` event ends it and the ``counts`` event that follows says how many messages every node
published in it, so the bag closes as soon as it holds them all, or after ``close_grace_s``
marked incomplete (the missing counts in the status).

Crash safety: the bag is flushed (MCAP chunk closed + fsync) every ``flush_period_s``, so a
SIGKILL loses at most that much; at start the node recovers every unclosed bag left in
``output_dir`` (readable again by rosbags and mcap readers), and the launch file respawns it.
When the policy process dies (:mod:`captain_ros.ros.liveness`), the episodes it left open end
at once, their bags marked incomplete.
Status (JSON on ``/captain/recorder/status``, latched): this instance, the open bags, the last
closed bags with their completeness, and the bags recovered at start.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import json
import os
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

from captain_ros.bags.episodes import ClosedBag, EpisodeRouter, stamp_of_cdr
from captain_ros.bags.rosbag2 import BagWriter, make_typestore, qos, recover_bag
from captain_ros.ros.estop import LATCHED_QOS
from captain_ros.ros.liveness import Liveness
from captain_ros.ros.params import declare
from captain_ros.ros.recorder_params import EVENTS_TOPIC, PARAMS


def stamp_ns(t: Any) -> int:
    return int(t.sec) * 1_000_000_000 + int(t.nanosec)


class RecorderNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("captain_recorder", **kwargs)
        self.p = declare(self, PARAMS)
        self.patterns = [t.strip() for t in self.p["topics"].split(",") if t.strip()]
        self.typestore = make_typestore()
        self.instance = f"{os.getpid()}-{time.time_ns()}"
        self._started_s = time.monotonic()
        self.router = EpisodeRouter(
            self._open_writer, buffer_s=self.p["buffer_s"], hold_s=self.p["hold_s"]
        )
        self.closed: list[ClosedBag] = []
        self.recovered = self._recover_crashed()
        self._types: dict[str, tuple[str, Any, bool]] = {}
        self._subs: dict[str, Any] = {}
        self.flushed: dict[str, dict[str, int]] = {}
        self._lock = threading.RLock()
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

    # --- crash recovery -------------------------------------------------------------------------
    def _recover_crashed(self) -> list[str]:
        """Make every unclosed bag in ``output_dir`` (a crashed recorder's) readable again."""
        out = Path(self.p["output_dir"])
        done = []
        for d in sorted(out.glob("*")) if out.is_dir() else []:
            if d.is_dir() and not (d / "metadata.yaml").exists() and list(d.glob("*.mcap")):
                try:
                    recover_bag(d)
                    done.append(str(d))
                    self.get_logger().warning(
                        f"recovered the unclosed bag {d} (a recorder crashed)"
                    )
                except Exception as exc:  # noqa: BLE001 - a bag beyond repair is reported, not fatal
                    self.get_logger().error(f"cannot recover {d}: {exc}")
        return done

    # --- subscriptions --------------------------------------------------------------------------
    def _discover(self) -> None:
        for topic, types in self.get_topic_names_and_types():
            if (
                topic in self._types
                or topic == EVENTS_TOPIC
                or not any(fnmatch.fnmatch(topic, p) for p in self.patterns)
            ):
                continue
            infos = self.get_publishers_info_by_topic(topic)
            if not infos:  # known only from a subscriber: its publishers decide the QoS (a
                continue  # latched topic subscribed volatile lost its state; the chaos soak)
            msgtype = types[0]
            pkg, _, name = msgtype.split("/")
            cls = getattr(importlib.import_module(f"{pkg}.msg"), name)
            reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
            latched = any(
                i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos
            )
            # deep reader queues: a flush (fsync) stall must not overflow KEEP_LAST and drop data
            big = msgtype in ("sensor_msgs/msg/Image", "sensor_msgs/msg/PointCloud2")
            depth = max([i.qos_profile.depth for i in infos] + [100 if big else 1000])
            sub_qos = QoSProfile(
                depth=depth,
                reliability=ReliabilityPolicy.RELIABLE
                if reliable
                else ReliabilityPolicy.BEST_EFFORT,
                durability=DurabilityPolicy.TRANSIENT_LOCAL
                if latched
                else DurabilityPolicy.VOLATILE,
            )
            self._types[topic] = (
                msgtype,
                qos(depth, reliable=reliable, transient_local=latched),
                latched,
            )
            self._subs[topic] = self.create_subscription(
                cls, topic, functools.partial(self._on_raw, topic), sub_qos, raw=True
            )
            self.get_logger().debug(f"recording {topic} [{msgtype}]")

    def _on_raw(self, topic: str, data: bytes, info: Any) -> None:
        msgtype, q, latched = self._types[topic]
        stamp = stamp_of_cdr(msgtype, data)
        with self._lock:
            self.router.message(
                topic, msgtype, q, data, stamp or int(info["source_timestamp"]), latched
            )  # 0: unset
            self._closed(self.router.poll())

    # --- episodes -------------------------------------------------------------------------------
    def _open_writer(self, episode_id: str) -> BagWriter:
        path = Path(self.p["output_dir"]) / (episode_id or time.strftime("%Y%m%d_%H%M%S"))
        self.get_logger().info(f"recording episode {episode_id} to {path}")
        return BagWriter(path, self.typestore)

    def _on_event(self, ev: EpisodeEvent) -> None:
        at = stamp_ns(ev.stamp)
        q = qos(100)
        data = serialize_message(ev)
        with self._lock:
            if ev.event == "start":
                self.router.start(ev.episode_id, at)
            self.router.message(
                EVENTS_TOPIC, "captain_ros_interfaces/msg/EpisodeEvent", q, data, at
            )
            detail = json.loads(ev.detail_json or "{}")
            if ev.event == "end":  # an aborted episode sends no counts: close it at once
                grace = self._abort_grace() if "aborted" in detail else self.p["close_grace_s"]
                self.router.end(ev.episode_id, at, grace)
            if ev.event in ("end", "counts") and "published" in detail:
                expected = {t: n for t, n in detail["published"].items() if t != EVENTS_TOPIC}
                self.router.expect(ev.episode_id, expected)
            self._closed(self.router.poll())
        self._status()

    def _abort_grace(self) -> float:
        """How long an aborted episode's bag stays open after its end [s]: what is held back."""
        return float(self.p["hold_s"]) + float(self.p["flush_period_s"])

    def _on_policy_lost(self, instance: str) -> None:
        """The policy process died: the episodes it left open end now, their bags incomplete
        (else they would grow until this recorder stops)."""
        with self._lock:
            for w in self.router.windows:
                if w.end_ns is None:
                    self.get_logger().warning(
                        f"the policy process {instance} died during episode "
                        f"{w.episode_id}: closing its bag (incomplete)"
                    )
                    self.router.end(w.episode_id, time.time_ns(), self._abort_grace())

    def _closed(self, bags: list[ClosedBag]) -> None:
        for b in bags:
            self.closed = [*self.closed[-9:], b]
            # one call site per severity: rclpy refuses a call site that changes severity
            if b.complete:
                self.get_logger().info(f"closed bag {b.path} (complete)")
            else:
                self.get_logger().warning(f"closed bag {b.path} (INCOMPLETE, missing {b.missing})")
        if bags:
            self._status()

    def flush(self) -> None:
        with self._lock:
            self._closed(self.router.poll())
            self.router.flush()
            self.flushed = {w.episode_id: dict(w.counts) for w in self.router.windows}
        self._status()

    def _status(self) -> None:
        if not self.context.ok():  # shutting down: the bags are closed, nobody to tell
            return
        with self._lock:
            status = {
                "instance": self.instance,
                "open": self.router.open_paths,
                "episodes": [w.episode_id for w in self.router.windows],
                "counts": {w.episode_id: dict(w.counts) for w in self.router.windows},
                "flushed": self.flushed,  # on disk: what a crash now would keep
                "closed": [b.to_dict() for b in self.closed],
                "last_closed": self.closed[-1].path if self.closed else "",
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
            if topic == EVENTS_TOPIC or not any(fnmatch.fnmatch(topic, p) for p in self.patterns):
                continue
            publishers = self.count_publishers(topic)
            if publishers == 0:  # a topic only subscribed to: nothing to miss yet
                continue
            sub = self._subs.get(topic)
            if sub is None or sub.get_publisher_count() < publishers:
                return False
        return True

    def destroy_node(self) -> None:
        with self._lock:
            self._closed(self.router.close_all())
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [RecorderNode()])


if __name__ == "__main__":
    raise SystemExit(main())
