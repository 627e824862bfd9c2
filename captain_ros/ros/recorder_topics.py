"""What the recorder node subscribes to, and how (:mod:`captain_ros.ros.recorder_node`).

:class:`TopicSelection`: the topics its ``topics`` parameter names (fnmatch patterns; the episode
events have their own subscription). :func:`reader_qos`: each topic is read with its publishers'
reliability and durability, so a latched topic keeps its state and a best-effort stream is not
asked for more than it offers, and with a deep reader queue: a flush (fsync) stall must not
overflow ``KEEP_LAST`` and drop data. The bag stores the profile offered.
"""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import Qos

from captain_ros.bags.rosbag2 import qos
from captain_ros.core.errors import InvalidArgumentError

BIG_TYPES = ("sensor_msgs/msg/Image", "sensor_msgs/msg/PointCloud2")
"""Types read with a shallower queue (each message is large)."""
BIG_DEPTH = 100
DEPTH = 1000


class TopicSelection:
    """The recorded topics: comma-separated fnmatch ``patterns``, less ``excluded``."""

    def __init__(self, patterns: str, excluded: Sequence[str] = ()) -> None:
        self.patterns = [t.strip() for t in patterns.split(",") if t.strip()]
        self.excluded = frozenset(excluded)

    def __contains__(self, topic: object) -> bool:
        return (
            isinstance(topic, str)
            and topic not in self.excluded
            and any(fnmatch.fnmatch(topic, p) for p in self.patterns)
        )


@dataclass(frozen=True)
class ReaderQos:
    """How one recorded topic is read and what its bag says was offered."""

    msgtype: str
    depth: int
    reliable: bool
    latched: bool
    """Some publisher is transient local: its last message belongs in every bag."""
    offered: Qos
    """The rosbag2 QoS record stored in the bag (:func:`captain_ros.bags.rosbag2.qos`)."""

    def profile(self) -> QoSProfile:
        """The subscription's QoS profile."""
        return QoSProfile(
            depth=self.depth,
            reliability=ReliabilityPolicy.RELIABLE
            if self.reliable
            else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL
            if self.latched
            else DurabilityPolicy.VOLATILE,
        )


def reader_qos(msgtype: str, offered: Sequence[QoSProfile]) -> ReaderQos:
    """The reader of a topic of ``msgtype`` whose publishers offer ``offered`` (at least one):
    reliable only when all of them are, transient local when any is, and at least as deep as the
    deepest of them."""
    if not offered:
        raise InvalidArgumentError(f"no publisher of the {msgtype} topic: its QoS is not known yet")
    reliable = all(p.reliability == ReliabilityPolicy.RELIABLE for p in offered)
    latched = any(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in offered)
    floor = BIG_DEPTH if msgtype in BIG_TYPES else DEPTH
    depth = max([p.depth for p in offered] + [floor])
    return ReaderQos(
        msgtype, depth, reliable, latched, qos(depth, reliable=reliable, transient_local=latched)
    )


def message_class(msgtype: str) -> Any:
    """The Python class of a message type named ``pkg/msg/Name``."""
    pkg, _, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)
