"""Which recorded message belongs to which episode's bag (pure Python, no rclpy).

An episode is a time window ``[start_ns, end_ns]`` announced by the policy node's episode events
(their header stamps). A message belongs to the episode whose window contains its *publish time*
(the DDS source timestamp), whatever its arrival time: an image that arrives 3 s late still goes
to the episode it was published in, and one published before the bag began goes to no bag of
this episode. Messages are buffered for a while, so a message that arrives before the ``start``
event does is not lost. The ``end`` event carries, per topic, how many messages the nodes
published in the window; the bag closes as soon as it holds them all (complete), or after a grace
period (incomplete, with the missing counts). Two windows may be open at once (the last one still
draining while the next starts). Bags are written with publish times as message times.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from captain_ros.bags.rosbag2 import BagWriter


@dataclass
class Window:
    """One episode's bag while it is being written."""

    episode_id: str
    start_ns: int
    writer: BagWriter
    end_ns: int | None = None
    expected: dict[str, int] = field(default_factory=dict)
    deadline_s: float | None = None
    counts: Counter[str] = field(default_factory=Counter)
    latched_copies: set[str] = field(default_factory=set)

    def contains(self, src_ns: int) -> bool:
        return src_ns >= self.start_ns and (self.end_ns is None or src_ns <= self.end_ns)

    def missing(self) -> dict[str, int]:
        return {t: n - self.counts[t] for t, n in self.expected.items() if self.counts[t] < n}


@dataclass(frozen=True)
class ClosedBag:
    """A finished bag: path, completeness and what was missing (per topic)."""

    episode_id: str
    path: str
    complete: bool
    missing: dict[str, int]
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "path": self.path, "complete": self.complete,
                "missing": self.missing, "counts": self.counts}


@dataclass(frozen=True)
class _Message:
    topic: str
    msgtype: str
    qos: Any
    data: bytes
    src_ns: int


class EpisodeRouter:
    """Routes serialized messages into per-episode bags by publish time.

    Args:
        open_writer: Opens the bag of an episode id.
        buffer_s: How long messages are kept for a window that starts later [s].
        buffer_bytes: Memory bound of that buffer (oldest dropped first).
        clock: Monotonic clock of the grace deadlines [s].
    """

    def __init__(self, open_writer: Callable[[str], BagWriter], buffer_s: float = 30.0,
                 buffer_bytes: int = 512 << 20, clock: Callable[[], float] = time.monotonic) -> None:
        self.open_writer = open_writer
        self.buffer_ns = int(buffer_s * 1e9)
        self.buffer_bytes = buffer_bytes
        self.clock = clock
        self.windows: list[Window] = []
        self.latched: dict[str, tuple[str, Any, bytes]] = {}
        self._buffer: deque[_Message] = deque()
        self._buffered_bytes = 0
        self._newest_ns = 0

    # --- messages -------------------------------------------------------------------------------
    def message(self, topic: str, msgtype: str, qos: Any, data: bytes, src_ns: int,
                latched: bool = False) -> None:
        """One received message (published at ``src_ns``)."""
        msg = _Message(topic, msgtype, qos, bytes(data), int(src_ns))
        if latched:  # a latched topic's last message belongs to every bag: once, as a copy
            self.latched[topic] = (msgtype, qos, msg.data)
            for w in self.windows:
                if topic not in w.latched_copies:
                    self._copy_latched(w, topic, max(msg.src_ns, w.start_ns))
            return
        for w in self.windows:
            if w.contains(msg.src_ns):
                self._write(w, msg)
        self._buffer.append(msg)
        self._buffered_bytes += len(msg.data)
        self._newest_ns = max(self._newest_ns, msg.src_ns)
        while self._buffer and (self._buffered_bytes > self.buffer_bytes
                                or self._buffer[0].src_ns < self._newest_ns - self.buffer_ns):
            self._buffered_bytes -= len(self._buffer.popleft().data)

    def _write(self, w: Window, msg: _Message) -> None:
        if not w.writer.has_topic(msg.topic):
            w.writer.add_topic(msg.topic, msg.msgtype, [msg.qos])
        w.writer.write(msg.topic, msg.src_ns, msg.data)
        w.counts[msg.topic] += 1

    # --- episodes -------------------------------------------------------------------------------
    def start(self, episode_id: str, start_ns: int) -> Window:
        """Open the bag of ``episode_id`` (window from ``start_ns``): the latched topics' last
        messages first, then every buffered message published since ``start_ns``."""
        w = Window(episode_id, int(start_ns), self.open_writer(episode_id))
        for topic in self.latched:
            self._copy_latched(w, topic, w.start_ns)
        for msg in sorted((m for m in self._buffer if w.contains(m.src_ns)), key=lambda m: m.src_ns):
            self._write(w, msg)
        self.windows.append(w)
        return w

    def _copy_latched(self, w: Window, topic: str, at_ns: int) -> None:
        msgtype, qos, data = self.latched[topic]
        if not w.writer.has_topic(topic):
            w.writer.add_topic(topic, msgtype, [qos])
        w.writer.write(topic, at_ns, data)  # the latched state, not a message of the window
        w.latched_copies.add(topic)

    def end(self, episode_id: str, end_ns: int, expected: dict[str, int], grace_s: float) -> None:
        """The window of ``episode_id`` ends at ``end_ns``; ``expected`` = published counts."""
        for w in self.windows:
            if w.episode_id == episode_id and w.end_ns is None:
                w.end_ns = int(end_ns)
                w.expected = {t: int(n) for t, n in expected.items() if t not in self.latched}
                w.deadline_s = self.clock() + grace_s
                return

    def poll(self) -> list[ClosedBag]:
        """Close the ended windows that are complete or past their grace deadline."""
        done = []
        for w in list(self.windows):
            if w.end_ns is None or w.deadline_s is None:
                continue
            missing = w.missing()
            if not missing or self.clock() >= w.deadline_s:
                done.append(self._close(w, not missing))
        return done

    def close_all(self) -> list[ClosedBag]:
        """Close every open window (shutdown): an unended window is incomplete."""
        return [self._close(w, w.end_ns is not None and not w.missing()) for w in list(self.windows)]

    def _close(self, w: Window, complete: bool) -> ClosedBag:
        self.windows.remove(w)
        w.writer.close()
        return ClosedBag(w.episode_id, str(w.writer.path), complete, w.missing(), dict(w.counts))

    @property
    def open_paths(self) -> list[str]:
        return [str(w.writer.path) for w in self.windows]

    def flush(self) -> None:
        for w in self.windows:
            w.writer.flush()
