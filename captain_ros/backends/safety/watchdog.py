"""Command watchdog: calls ``on_expire`` when no command re-armed it within ``timeout_s`` [s]."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class CommandWatchdog:
    """A daemon thread; :meth:`arm` after each command of a move, :meth:`disarm` when it ends."""

    def __init__(self, timeout_s: float, on_expire: Callable[[], None]) -> None:
        self.timeout_s = float(timeout_s)
        self.on_expire = on_expire
        self.expired = 0
        self._deadline: float | None = None
        self._cv = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)
        self._thread.start()

    def arm(self) -> None:
        with self._cv:
            self._deadline = time.monotonic() + self.timeout_s
            self._cv.notify()

    def disarm(self) -> None:
        with self._cv:
            self._deadline = None
            self._cv.notify()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join(timeout=1.0)

    def _run(self) -> None:
        while True:
            with self._cv:
                if self._closed:
                    return
                if self._deadline is None:
                    self._cv.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cv.wait(left)
                    continue
                self._deadline = None
                self.expired += 1
            self.on_expire()
