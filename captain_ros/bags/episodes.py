"""Which recorded message belongs to which episode's bag (pure Python, no rclpy).

An episode is a time window ``[start_ns, end_ns]`` announced by the policy node's episode events
(their header stamps). A message belongs to the episode whose window contains its *stamp* (the
header stamp its node gave it, :func:`stamp_of_cdr`; the DDS source timestamp for messages without
one or with an unset, zero stamp), whatever its arrival time: an image that arrives 3 s late still goes
to the episode it was published in, and one published before the bag began goes to no bag of
this episode. Messages are buffered for a while, so a message that arrives before the ``start``
event does is not lost. The ``end`` event carries, per topic, how many messages the nodes
published in the window; the bag closes as soon as it holds them all (complete), or after a grace
period (incomplete, with the missing counts). Two windows may be open at once (the last one still
draining while the next starts). A message is written once it is older than ``hold_s`` (its
window's end may still be announced after it was published), so a crash loses at most
``hold_s`` plus the flush period. Bags are written with the stamps as message times.
"""

from __future__ import annotations

import json
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from captain_ros.bags.rosbag2 import BagWriter, read_messages

_STAMP_FIRST = frozenset(
    {
        "sensor_msgs/msg/JointState",
        "sensor_msgs/msg/Image",
        "sensor_msgs/msg/CameraInfo",
        "geometry_msgs/msg/WrenchStamped",
        "captain_ros_interfaces/msg/Receipt",
        "captain_ros_interfaces/msg/EpisodeEvent",
        "captain_ros_interfaces/msg/ObservationHandle",
        "captain_ros_interfaces/msg/Detections",
    }
)
"""Types whose CDR starts with a header stamp (``std_msgs/Header`` or ``builtin_interfaces/Time``)."""


def stamp_of_cdr(msgtype: str, data: bytes) -> int | None:
    """The header stamp [ns] of a serialized message (little-endian CDR), ``None`` when its type
    has none (``tf2_msgs/TFMessage``: its first transform's stamp)."""
    offset = 4 if msgtype in _STAMP_FIRST else 8 if msgtype == "tf2_msgs/msg/TFMessage" else None
    if offset is None or len(data) < offset + 8 or data[1] != 1:  # 0x0001: CDR little endian
        return None
    if offset == 8 and int.from_bytes(data[4:8], "little") == 0:
        return None  # an empty TFMessage
    sec = int.from_bytes(data[offset : offset + 4], "little", signed=True)
    nanosec = int.from_bytes(data[offset + 4 : offset + 8], "little")
    return sec * 1_000_000_000 + nanosec


def stamp_of_message(msg: Any) -> int | None:
    """The same stamp [ns] of a message object (rclpy or rosbags), ``None`` without one."""
    stamp = getattr(getattr(msg, "header", None), "stamp", None) or getattr(msg, "stamp", None)
    transforms = getattr(msg, "transforms", None)
    if stamp is None and transforms:
        stamp = transforms[0].header.stamp
    if stamp is None:
        return None
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


@dataclass
class Window:
    """One episode's bag while it is being written."""

    episode_id: str
    start_ns: int
    writer: BagWriter
    end_ns: int | None = None
    expected: dict[str, int] | None = None
    deadline_s: float | None = None
    counts: Counter[str] = field(default_factory=Counter)
    latched_copies: set[str] = field(default_factory=set)
    pending: list[_Message] = field(default_factory=list)

    def contains(self, stamp_ns: int) -> bool:
        return stamp_ns >= self.start_ns and (self.end_ns is None or stamp_ns <= self.end_ns)

    def missing(self) -> dict[str, int]:
        return {
            t: n - self.counts[t] for t, n in (self.expected or {}).items() if self.counts[t] < n
        }


@dataclass(frozen=True)
class ClosedBag:
    """A finished bag: path, completeness and what was missing (per topic)."""

    episode_id: str
    path: str
    complete: bool
    missing: dict[str, int]
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "path": self.path,
            "complete": self.complete,
            "missing": self.missing,
            "counts": self.counts,
        }


@dataclass(frozen=True)
class _Message:
    topic: str
    msgtype: str
    qos: Any
    data: bytes
    stamp_ns: int


class EpisodeRouter:
    """Routes serialized messages into per-episode bags by their stamps.

    Args:
        open_writer: Opens the bag of an episode id.
        buffer_s: How long messages are kept for a window that starts later [s].
        buffer_bytes: Memory bound of that buffer (oldest dropped first).
        hold_s: A message is written once it is this much older than now [s] (or its window ended).
        clock: Monotonic clock of the grace deadlines [s]; ``now_ns``: the stamps' clock [ns].
    """

    def __init__(
        self,
        open_writer: Callable[[str], BagWriter],
        buffer_s: float = 30.0,
        buffer_bytes: int = 512 << 20,
        hold_s: float = 0.3,
        clock: Callable[[], float] = time.monotonic,
        now_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.open_writer = open_writer
        self.buffer_ns = int(buffer_s * 1e9)
        self.buffer_bytes = buffer_bytes
        self.hold_ns = int(hold_s * 1e9)
        self.clock = clock
        self.now_ns = now_ns
        self.windows: list[Window] = []
        self.latched: dict[str, tuple[str, Any, bytes]] = {}
        self._buffer: deque[_Message] = deque()
        self._buffered_bytes = 0
        self._newest_ns = 0

    # --- messages -------------------------------------------------------------------------------
    def message(
        self, topic: str, msgtype: str, qos: Any, data: bytes, stamp_ns: int, latched: bool = False
    ) -> None:
        """One received message (stamped ``stamp_ns``)."""
        msg = _Message(topic, msgtype, qos, bytes(data), int(stamp_ns))
        if latched:  # a latched topic's last message belongs to every bag: once, as a copy
            self.latched[topic] = (msgtype, qos, msg.data)
            for w in self.windows:
                if topic not in w.latched_copies:
                    if w.contains(msg.stamp_ns):
                        w.latched_copies.add(topic)  # the message itself is the window's
                    else:
                        self._copy_latched(w, topic, max(msg.stamp_ns, w.start_ns))
            # and one published inside a window is a message of that window like any other (an
            # e-stop latched mid-episode: its bag once held only the state copied at the start)
        for w in self.windows:
            if w.contains(msg.stamp_ns):
                w.pending.append(msg)
        self._buffer.append(msg)
        self._buffered_bytes += len(msg.data)
        self._newest_ns = max(self._newest_ns, msg.stamp_ns)
        while self._buffer and (
            self._buffered_bytes > self.buffer_bytes
            or self._buffer[0].stamp_ns < self._newest_ns - self.buffer_ns
        ):
            self._buffered_bytes -= len(self._buffer.popleft().data)
        self.release()

    def release(self) -> None:
        """Write each window's held messages that are old enough, or inside its ended window."""
        now = self.now_ns()
        for w in self.windows:
            cutoff = w.end_ns if w.end_ns is not None else now - self.hold_ns
            ready = sorted((m for m in w.pending if m.stamp_ns <= cutoff), key=lambda m: m.stamp_ns)
            keep = [] if w.end_ns is not None else [m for m in w.pending if m.stamp_ns > cutoff]
            w.pending = keep
            for m in ready:
                self._write(w, m)

    def _write(self, w: Window, msg: _Message) -> None:
        if not w.writer.has_topic(msg.topic):
            w.writer.add_topic(msg.topic, msg.msgtype, [msg.qos])
        w.writer.write(msg.topic, msg.stamp_ns, msg.data)
        w.counts[msg.topic] += 1

    def _copy_latched(self, w: Window, topic: str, at_ns: int) -> None:
        msgtype, qos, data = self.latched[topic]
        if not w.writer.has_topic(topic):
            w.writer.add_topic(topic, msgtype, [qos])
        w.writer.write(topic, at_ns, data)  # the latched state, not a message of the window
        w.latched_copies.add(topic)

    # --- episodes -------------------------------------------------------------------------------
    def start(self, episode_id: str, start_ns: int) -> Window:
        """Open the bag of ``episode_id`` (window from ``start_ns``): the latched topics' last
        messages first, then every buffered message stamped since ``start_ns``."""
        w = Window(episode_id, int(start_ns), self.open_writer(episode_id))
        for topic in self.latched:
            self._copy_latched(w, topic, w.start_ns)
        w.pending = [m for m in self._buffer if w.contains(m.stamp_ns)]
        self.windows.append(w)
        self.release()
        return w

    def end(self, episode_id: str, end_ns: int, grace_s: float) -> None:
        """The window of ``episode_id`` ends at ``end_ns`` (later stamps are not its)."""
        for w in self.windows:
            if w.episode_id == episode_id and w.end_ns is None:
                w.end_ns = int(end_ns)
                w.deadline_s = self.clock() + grace_s
        self.release()

    def expect(self, episode_id: str, expected: dict[str, int]) -> None:
        """What the nodes published in the (ended) window of ``episode_id``, per topic."""
        for w in self.windows:
            if w.episode_id == episode_id:
                w.expected = {t: int(n) for t, n in expected.items()}

    def poll(self) -> list[ClosedBag]:
        """Close the ended windows that are complete or past their grace deadline."""
        self.release()
        done = []
        for w in list(self.windows):
            if w.end_ns is None or w.deadline_s is None:
                continue
            complete = w.expected is not None and not w.missing()
            if complete or self.clock() >= w.deadline_s:
                done.append(self._close(w, complete))
        return done

    def close_all(self) -> list[ClosedBag]:
        """Close every open window (shutdown): an unended window is incomplete."""
        done = []
        for w in list(self.windows):
            for m in sorted(w.pending, key=lambda m: m.stamp_ns):
                self._write(w, m)
            w.pending = []
            done.append(
                self._close(w, w.end_ns is not None and w.expected is not None and not w.missing())
            )
        return done

    def _close(self, w: Window, complete: bool) -> ClosedBag:
        self.windows.remove(w)
        w.writer.close()
        return ClosedBag(w.episode_id, str(w.writer.path), complete, w.missing(), dict(w.counts))

    @property
    def open_paths(self) -> list[str]:
        return [str(w.writer.path) for w in self.windows]

    def flush(self) -> None:
        self.release()
        for w in self.windows:
            w.writer.flush()


def published_in_window(bag: str) -> dict[str, int] | None:
    """What the nodes reported publishing in a bag's episode window (its last ``counts`` episode
    event), ``None`` for a bag without one."""
    counts = [
        m for _t, _s, m in read_messages(bag, ["/captain/episode_events"]) if m.event == "counts"
    ]
    if not counts:
        return None
    return {
        str(t): int(n) for t, n in json.loads(counts[-1].detail_json).get("published", {}).items()
    }
