"""Stamps per topic in a time window, stored compactly: the ground truth a bag is checked against.

:class:`~captain_ros.ros.publish_log.PublishLog` records the stamp of every message a node
publishes and answers how many fell in an episode's window. The window reaches back ``keep_s``
(an episode may last up to its wall budget, 1,080 s by default, so an hour is kept), and a robot
node publishes a few hundred messages a second: as Python ints in a deque that was 10 MB an hour,
which the 200-goal soak saw as the robot process growing by 12 %. Here each topic's stamps are
one sorted ``array('q')`` (8 bytes a stamp) whose expired head is cut in blocks.
"""

from __future__ import annotations

import bisect
from array import array

TRIM_MIN = 4096
"""Expired stamps are cut once at least this many (and half the array) have expired."""


class StampLog:
    """Sorted stamps [ns] per topic, those older than ``keep_ns`` before the newest dropped."""

    def __init__(self, keep_ns: int) -> None:
        if keep_ns <= 0:
            raise ValueError(f"keep_ns must be positive, got {keep_ns}")
        self.keep_ns = keep_ns
        self._stamps: dict[str, array[int]] = {}
        self._head: dict[str, int] = {}  # index of the first stamp still kept

    def record(self, topic: str, stamp_ns: int) -> None:
        """Add one stamp (in order, or a little late from another thread: kept sorted)."""
        a = self._stamps.get(topic)
        if a is None:
            a = self._stamps[topic] = array("q")
            self._head[topic] = 0
        if a and stamp_ns < a[-1]:
            a.insert(bisect.bisect_right(a, stamp_ns), stamp_ns)
        else:
            a.append(stamp_ns)
        head = bisect.bisect_left(a, a[-1] - self.keep_ns, self._head[topic])
        if head >= TRIM_MIN and 2 * head >= len(a):
            del a[:head]
            head = 0
        self._head[topic] = head

    def count(self, topic: str, start_ns: int, end_ns: int) -> int:
        """Stamps of ``topic`` in ``[start_ns, end_ns]``."""
        a = self._stamps.get(topic)
        if a is None:
            return 0
        lo = self._head[topic]
        return max(0, bisect.bisect_right(a, end_ns, lo) - bisect.bisect_left(a, start_ns, lo))

    def counts(self, start_ns: int, end_ns: int) -> dict[str, int]:
        """Stamps per topic in ``[start_ns, end_ns]`` (topics with none left out)."""
        out = {t: self.count(t, start_ns, end_ns) for t in self._stamps}
        return {t: n for t, n in out.items() if n}

    def kept(self, topic: str) -> int:
        """How many stamps of ``topic`` are kept (inside the window)."""
        a = self._stamps.get(topic)
        return 0 if a is None else len(a) - self._head[topic]

    def nbytes(self) -> int:
        """Bytes the stamp arrays hold (expired heads not yet cut included)."""
        return sum(a.itemsize * len(a) for a in self._stamps.values())
