"""Observers of an episode: how front ends watch (and may end) the harness loop.

The terminal display of ``captain run``, the in-process bag writer, the ROS policy node's receipt
publisher and its cancel handling are all :class:`EpisodeObserver` subclasses handed to
:func:`~captain_ros.harness.episode.loop.run_episode`. They see every request, reply and robot call
(with its final Result, budget attached) and the finished record; :meth:`before_request` may end
the episode at a request boundary. An observer that raises is logged and ignored: it never
breaks the episode.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from captain_ros.core.result import Result
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.policy.base import PolicyReply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeStart:
    """What an observer learns when the episode starts."""

    task: str
    seed: int
    policy: str
    backend: str
    out_dir: str
    budgets: dict[str, Any]


@dataclass(frozen=True)
class CallEvent:
    """One robot call (``finish`` included) with its final Result.

    Attributes:
        request: Request index t (1-based). ``cell``: cell index within the request (0-based).
        index: Call index within the episode (1-based).
        duration_s: Wall time of the call, harness accounting included [s].
    """

    request: int
    cell: int
    index: int
    name: str
    kwargs: dict[str, Any]
    result: Result
    duration_s: float


@dataclass(frozen=True)
class Stop:
    """Ends the episode before the next request.

    Attributes:
        reason: Short machine-readable reason (``canceled``, ``early_stop``, ...); the record's
            ``end_reason`` becomes ``stop:<reason>``.
        settle_as_budget: Settle the episode as budget exhausted (e.g. the critic's early stop).
    """

    reason: str
    settle_as_budget: bool = False


class EpisodeObserver:
    """Base class: override what you need (every hook is optional)."""

    def on_start(self, info: EpisodeStart) -> None:
        """The episode is about to make its first request."""

    def on_state(self, t: int, state: Any) -> None:
        """Simulation only: s_t (a :class:`~captain_ros.harness.record.privileged_log.StateRecord`) was
        read, just before :meth:`before_request` for ``t`` (a critic can decide on it)."""

    def before_request(self, t: int) -> Stop | None:
        """Request ``t`` is next; return a :class:`Stop` to end the episode instead."""
        return None

    def on_reply(self, t: int, reply: PolicyReply) -> None:
        """The policy answered request ``t``."""

    def on_call(self, event: CallEvent) -> None:
        """A robot call returned."""

    def on_request(self, t: int, entry: dict[str, Any]) -> None:
        """Request ``t`` is done; ``entry`` is its ``trajectory.jsonl`` line."""

    def on_privileged(self, line: dict[str, Any]) -> None:
        """A line of ``privileged.jsonl`` was written (simulation only; never for the policy)."""

    def on_trajectory(self, line: dict[str, Any]) -> None:
        """A line of ``trajectory.jsonl``: the ``episode_start`` line, each ``request`` line, and
        the ``episode_end`` line with the settled record *before* :meth:`amend` (so a bag can
        carry it before it closes; the file's end line also names the bag)."""

    def amend(self, record: EpisodeRecord) -> EpisodeRecord:
        """Last word on the record before ``summary.json`` is written (e.g. the bag's path and
        completeness); return it, changed or not."""
        return record

    def on_end(self, record: EpisodeRecord) -> None:
        """The episode is over; ``record`` is what ``summary.json`` holds."""


class Observers(EpisodeObserver):
    """Several observers as one; each hook is guarded."""

    def __init__(self, observers: Sequence[EpisodeObserver] = ()) -> None:
        self.items = list(observers)

    def _each(self, hook: str, *args: Any) -> list[Any]:
        out = []
        for o in self.items:
            try:
                out.append(getattr(o, hook)(*args))
            except Exception:  # noqa: BLE001 - an observer must not break the episode
                log.exception("episode observer %s.%s failed", type(o).__name__, hook)
        return out

    def on_start(self, info: EpisodeStart) -> None:
        self._each("on_start", info)

    def on_state(self, t: int, state: Any) -> None:
        self._each("on_state", t, state)

    def before_request(self, t: int) -> Stop | None:
        return next((s for s in self._each("before_request", t) if isinstance(s, Stop)), None)

    def on_reply(self, t: int, reply: PolicyReply) -> None:
        self._each("on_reply", t, reply)

    def on_call(self, event: CallEvent) -> None:
        self._each("on_call", event)

    def on_request(self, t: int, entry: dict[str, Any]) -> None:
        self._each("on_request", t, entry)

    def on_privileged(self, line: dict[str, Any]) -> None:
        self._each("on_privileged", line)

    def on_trajectory(self, line: dict[str, Any]) -> None:
        self._each("on_trajectory", line)

    def amend(self, record: EpisodeRecord) -> EpisodeRecord:
        for o in self.items:
            try:
                amended = o.amend(record)
            except Exception:  # noqa: BLE001
                log.exception("episode observer %s.amend failed", type(o).__name__)
                continue
            if isinstance(amended, EpisodeRecord):
                record = amended
        return record

    def on_end(self, record: EpisodeRecord) -> None:
        self._each("on_end", record)
