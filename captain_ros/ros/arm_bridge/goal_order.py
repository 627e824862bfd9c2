"""The order in which an arm's trajectory goals take effect (no rclpy).

A streaming client sends a goal every control tick, each preempting the last. The driver numbers
each arm's goals when it accepts them (before the client hears "accepted", so the numbers follow
the send order), but its executor may run two goals' execute callbacks out of order under load:
a goal that starts after a newer one was accepted is superseded and never runs, so an older goal
never preempts a newer one. Starting a goal happens under the same lock as the acceptance, so no
newer goal can be accepted between the check and the start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable


class GoalOrder:
    """Acceptance numbers of each arm's goals (a goal is keyed by any hashable: ``id(request)``)."""

    def __init__(self, arms: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._accepted: dict[str, int] = dict.fromkeys(arms, 0)
        self._seq: dict[object, int] = {}

    def accept(self, arm: str, key: object) -> int:
        """Number the goal ``key`` of ``arm`` as its newest; the number."""
        with self._lock:
            self._accepted[arm] += 1
            self._seq[key] = self._accepted[arm]
            return self._accepted[arm]

    def start(self, arm: str, key: object, begin: Callable[[], int]) -> int | None:
        """Run ``begin`` (start the motion; its token) unless a goal of ``arm`` newer than ``key``
        was accepted: then ``None``, and nothing started. The key is forgotten either way."""
        with self._lock:
            seq = self._seq.pop(key, 0)
            if seq < self._accepted[arm]:
                return None
            return begin()

    @property
    def pending(self) -> int:
        """Accepted goals that have not started (nor been superseded at their start) yet."""
        with self._lock:
            return len(self._seq)
