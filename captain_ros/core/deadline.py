"""Cooperative deadlines of robot calls.

A robot call runs in the harness's (or the robot node's) own thread, so it cannot be killed from
outside without leaving the backend in an unknown state. Instead, the caller opens a
:func:`scope` with the time the call may take, and the loops whose work grows with the call's
arguments (the IK of every control tick, collision checks, the tick loop that drives the
robot) ask :func:`expired` or :func:`check` at every step. Scopes nest: the inner deadline is
never later than the outer one, so a call's own deadline (derived from its arguments,
:mod:`captain_ros.api.deadlines`) is cut short by the episode's wall-time budget opened around it.

The deadline lives in a :class:`contextvars.ContextVar`: each thread (and asyncio task) has its
own, and code that never opens a scope runs without one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from captain_ros.core.errors import CaptainError
from captain_ros.core.result import FailureCategory

_CURRENT: ContextVar[tuple[float, str] | None] = ContextVar("captain_deadline", default=None)


class DeadlineExceeded(CaptainError):
    """A call ran past its deadline before anything moved (category ``timeout``)."""

    failure_category = FailureCategory.TIMEOUT

    def __init__(self, message: str, **diagnostics: Any) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


@contextlib.contextmanager
def scope(seconds: float, what: str) -> Iterator[None]:
    """Run the body under a deadline ``seconds`` [s] from now (or the enclosing one, if earlier).

    Args:
        seconds: Time allowed [s]; <= 0 means already expired.
        what: Names the limit in messages, e.g. ``"move_to's 210 s deadline"``.
    """
    new = (time.monotonic() + max(0.0, float(seconds)), what)
    cur = _CURRENT.get()
    token = _CURRENT.set(cur if cur is not None and cur[0] <= new[0] else new)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def remaining_s() -> float | None:
    """Seconds left before the current deadline (None: no deadline)."""
    cur = _CURRENT.get()
    return None if cur is None else cur[0] - time.monotonic()


def expired() -> bool:
    """The current deadline has passed."""
    cur = _CURRENT.get()
    return cur is not None and time.monotonic() >= cur[0]


def what() -> str:
    """The name of the current deadline (``""``: none)."""
    cur = _CURRENT.get()
    return "" if cur is None else cur[1]


def check(doing: str = "planning") -> None:
    """Raise :class:`DeadlineExceeded` when the current deadline has passed."""
    cur = _CURRENT.get()
    if cur is not None and time.monotonic() >= cur[0]:
        raise DeadlineExceeded(
            f"{cur[1]} passed while {doing}; nothing moved. Ask for less at once "
            "(a shorter or faster move, fewer points)"
        )
