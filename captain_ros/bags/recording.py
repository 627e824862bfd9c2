"""One recorder's episodes (pure Python, no rclpy): what the recorder node does with what it hears.

Received messages go to the bag of the episode they were published in
(:class:`~captain_ros.bags.episodes.EpisodeRouter`). The policy node's episode events drive the
windows: ``start`` opens the episode's bag, ``end`` ends its window, and the ``counts`` event that
follows (or an ``end`` that carries them) says how many messages every node published in it, so the
bag closes as soon as it holds them all, or after ``close_grace_s`` marked incomplete. An aborted
episode sends no counts: its bag closes after :attr:`Recording.abort_grace_s`, what is held back.
The events themselves are recorded too (on ``events_topic``, never counted as expected).

The node (:mod:`captain_ros.ros.recorder_node`) calls this from several executor threads: every
method takes the one lock, and each returns the bags it closed so the node can report them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from captain_ros.bags.episodes import ClosedBag, EpisodeRouter
from captain_ros.bags.rosbag2 import BagWriter, make_typestore, qos

EVENT_TYPE = "captain_ros_interfaces/msg/EpisodeEvent"
KEEP_CLOSED = 10
"""How many closed bags the status lists (the newest last)."""


class Recording:
    """The episodes of one recorder, written as one bag per episode under ``output_dir``.

    Args:
        output_dir: Folder of the bags (one sub-folder per episode id).
        events_topic: Topic of the episode events (recorded, not expected in the counts).
        close_grace_s: Longest wait after ``end`` for the published messages [s].
        hold_s: A message is written once this much older than now [s].
        flush_period_s: How often the node flushes [s] (with ``hold_s``: an aborted bag's grace).
        buffer_s: How long messages wait for an episode whose ``start`` comes after them [s].
        on_open: Told ``(episode_id, path)`` when an episode's bag opens.
        clock, now_ns: The router's clocks (monotonic [s], the stamps' [ns]).
    """

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        *,
        events_topic: str,
        close_grace_s: float,
        hold_s: float,
        flush_period_s: float,
        buffer_s: float,
        on_open: Callable[[str, Path], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
        now_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.output_dir = Path(output_dir)
        self.events_topic = events_topic
        self.close_grace_s = float(close_grace_s)
        self.abort_grace_s = float(hold_s) + float(flush_period_s)
        """How long an aborted episode's bag stays open after its end [s]: what is held back."""
        self.on_open = on_open
        self.typestore = make_typestore()
        self.lock = threading.RLock()
        self.router = EpisodeRouter(
            self._open_writer, buffer_s=buffer_s, hold_s=hold_s, clock=clock, now_ns=now_ns
        )
        self.closed: list[ClosedBag] = []
        self.flushed: dict[str, dict[str, int]] = {}
        self._event_qos = qos(100)

    def _open_writer(self, episode_id: str) -> BagWriter:
        path = self.output_dir / (episode_id or time.strftime("%Y%m%d_%H%M%S"))
        if self.on_open is not None:
            self.on_open(episode_id, path)
        return BagWriter(path, self.typestore)

    def message(
        self, topic: str, msgtype: str, qos: Any, data: bytes, stamp_ns: int, latched: bool
    ) -> list[ClosedBag]:
        """One received message of a recorded topic (stamped ``stamp_ns``)."""
        with self.lock:
            self.router.message(topic, msgtype, qos, data, stamp_ns, latched)
            return self._closed(self.router.poll())

    def event(
        self, episode_id: str, event: str, detail_json: str, stamp_ns: int, data: bytes
    ) -> list[ClosedBag]:
        """One episode event (``data``: the serialized message, stamped ``stamp_ns``)."""
        with self.lock:
            if event == "start":
                self.router.start(episode_id, stamp_ns)
            self.router.message(self.events_topic, EVENT_TYPE, self._event_qos, data, stamp_ns)
            detail = json.loads(detail_json or "{}")
            if event == "end":  # an aborted episode sends no counts: close it at once
                grace = self.abort_grace_s if "aborted" in detail else self.close_grace_s
                self.router.end(episode_id, stamp_ns, grace)
            if event in ("end", "counts") and "published" in detail:
                expected = {t: n for t, n in detail["published"].items() if t != self.events_topic}
                self.router.expect(episode_id, expected)
            return self._closed(self.router.poll())

    def end_unended(self, end_ns: int) -> list[str]:
        """End every episode still open at ``end_ns`` (its policy process died), its bag to close
        incomplete after :attr:`abort_grace_s`; the episode ids."""
        with self.lock:
            ended = [w.episode_id for w in self.router.windows if w.end_ns is None]
            for episode_id in ended:
                self.router.end(episode_id, end_ns, self.abort_grace_s)
        return ended

    def flush(self) -> list[ClosedBag]:
        """Close what is due, write the held messages that are old enough and flush every open bag
        to disk (what a crash now would keep: :attr:`flushed`)."""
        with self.lock:
            closed = self._closed(self.router.poll())
            self.router.flush()
            self.flushed = {w.episode_id: dict(w.counts) for w in self.router.windows}
        return closed

    def close_all(self) -> list[ClosedBag]:
        """Close every bag (shutdown): a window that has not ended is incomplete."""
        with self.lock:
            return self._closed(self.router.close_all())

    def _closed(self, bags: list[ClosedBag]) -> list[ClosedBag]:
        for b in bags:
            self.closed = [*self.closed[1 - KEEP_CLOSED :], b]
        return bags

    def status(self) -> dict[str, Any]:
        """The open bags, their episodes' counts (written, and flushed to disk) and the last
        closed bags with their completeness."""
        with self.lock:
            return {
                "open": self.router.open_paths,
                "episodes": [w.episode_id for w in self.router.windows],
                "counts": {w.episode_id: dict(w.counts) for w in self.router.windows},
                "flushed": self.flushed,  # on disk: what a crash now would keep
                "closed": [b.to_dict() for b in self.closed],
                "last_closed": self.closed[-1].path if self.closed else "",
            }
