"""A latched e-stop: tripped by any source (operator topic/service, hardware stop, a guard),
released only by an explicit :meth:`EStopLatch.reset`. Thread-safe; tripping never blocks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class EStopEvent:
    """One trip: ``source`` (operator | hardware | guard name), ``reason``, wall time [s]."""

    source: str
    reason: str
    wall_s: float


class EStopLatch:
    """Latched emergency stop shared by every arm of a rig."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event: EStopEvent | None = None
        self.listeners: list[Callable[[EStopEvent], None]] = []

    def trip(self, source: str, reason: str) -> EStopEvent:
        """Latch (the first trip's reason is kept until reset); returns the latched event."""
        with self._lock:
            if self._event is None:
                self._event = EStopEvent(source, reason or source, time.time())
                fresh = True
            else:
                fresh = False
            event = self._event
        if fresh:
            for fn in list(self.listeners):
                fn(event)
        return event

    def reset(self) -> None:
        """Release the latch (the explicit operator call; nothing else clears it)."""
        with self._lock:
            self._event = None

    @property
    def tripped(self) -> bool:
        return self._event is not None

    @property
    def event(self) -> EStopEvent | None:
        return self._event

    def message(self) -> str:
        e = self._event
        return "" if e is None else f"e-stop latched by {e.source} ({e.reason})"
