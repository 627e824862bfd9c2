"""Follows the recorder node's latched status: is an episode's bag open, closed, complete?

The policy node waits (bounded, on status updates, no polling sleeps) for the recorder to open an
episode's bag and, after the episode, to close it. It never waits on a recorder known to be gone:
when the status topic loses its publisher, or a different recorder instance (a respawn) takes
over, the bag is reported incomplete at once with the reason.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rclpy.node import Node
from std_msgs.msg import String

from captain_ros.ros.estop import LATCHED_QOS

STATUS_TOPIC = "/captain/recorder/status"


@dataclass(frozen=True)
class BagOutcome:
    """What became of an episode's bag."""

    path: str
    complete: bool
    status: str  # "complete" | "incomplete: <why>" | "none: <why>"


class RecorderWatch:
    """Subscribes to ``/captain/recorder/status``; waits on its updates."""

    def __init__(
        self, node: Node, wait_s: float, callback_group: Any = None, expected: bool = False
    ) -> None:
        self.node = node
        self.wait_s = float(wait_s)
        self.expected = bool(expected)  # the launch started one: wait for it to be discovered
        self.status: dict[str, Any] = {}
        self._event = threading.Event()
        node.create_subscription(
            String, STATUS_TOPIC, self._on_status, LATCHED_QOS, callback_group=callback_group
        )

    def _on_status(self, msg: String) -> None:
        try:
            self.status = json.loads(msg.data)
        except ValueError:
            return
        self._event.set()

    def _alive(self) -> bool:
        return self.node.count_publishers(STATUS_TOPIC) > 0

    def _absent(self) -> bool:
        """No recorder in the graph (an expected one is waited for, at most ``wait_s``)."""
        if self.status or self._alive():
            return False
        return not (self.expected and self._wait(lambda: bool(self.status)))

    def _wait(self, done: Any, give_up: Any = lambda: False) -> bool:
        deadline = time.monotonic() + self.wait_s
        while not done():
            left = deadline - time.monotonic()
            if left <= 0 or give_up():
                return False
            self._event.wait(min(left, 0.1))
            self._event.clear()
        return True

    def wait_ready(self, events_matched: Callable[[], bool] = lambda: True) -> bool:
        """Wait (at most ``wait_s``) until the recorder, if one runs, is subscribed and matched to
        every publisher of its topics and ``events_matched()`` says the episode events reach it
        (a volatile ``start`` event published before the match is lost, and with it the bag), so
        that the episode about to start loses nothing; False when no recorder runs or it did not
        get ready in time."""
        if self._absent():
            return False
        return self._wait(
            lambda: bool(self.status.get("ready")) and bool(events_matched()),
            give_up=lambda: not self._alive(),
        )

    def bag_opened(self, episode_id: str) -> tuple[str, str]:
        """``(path, recorder instance)`` of the bag opened for ``episode_id`` ("" when no recorder
        runs or it did not open one in time)."""
        if self._absent():
            return "", ""  # no recorder in the graph
        # open, and matched to every publisher of its topics (a new recorder still discovering
        # them would miss the episode's first messages)
        ok = self._wait(
            lambda: (
                episode_id in (self.status.get("episodes") or []) and bool(self.status.get("ready"))
            ),
            give_up=lambda: not self._alive(),
        )
        if not ok:
            return "", str(self.status.get("instance", ""))
        paths = self.status.get("open") or []
        idx = (self.status.get("episodes") or []).index(episode_id)
        return (str(paths[idx]) if idx < len(paths) else ""), str(self.status.get("instance", ""))

    def bag_closed(self, episode_id: str, opened: tuple[str, str]) -> BagOutcome:
        """Wait for the recorder to close ``episode_id``'s bag; report its completeness."""
        path, instance = opened
        if not path:
            why = "no recorder was running" if not instance else "the recorder did not open a bag"
            return BagOutcome("", False, f"none: {why}")

        def closed() -> dict[str, Any] | None:
            return next(
                (b for b in self.status.get("closed") or [] if b.get("episode_id") == episode_id),
                None,
            )

        def gone() -> bool:
            return not self._alive() or str(self.status.get("instance", "")) != instance

        self._wait(lambda: closed() is not None, give_up=gone)
        bag = closed()
        if bag is not None:
            if bag.get("complete"):
                return BagOutcome(path, True, "complete")
            return BagOutcome(path, False, f"incomplete: missing {bag.get('missing')}")
        if not self._alive():
            # forget the dead recorder's last status (it said "ready"): the next episode waits for
            # its successor's own status instead of starting before that one has subscribed
            self.status = {}
            return BagOutcome(
                path,
                False,
                "incomplete: the recorder died during the episode "
                "(`captain bag recover` makes the bag readable)",
            )
        if str(self.status.get("instance", "")) != instance:
            return BagOutcome(
                path,
                False,
                "incomplete: the recorder restarted during the episode "
                "(it recovered the crashed bag up to its last flush)",
            )
        return BagOutcome(
            path, False, f"incomplete: the recorder did not close it within {self.wait_s:g} s"
        )
