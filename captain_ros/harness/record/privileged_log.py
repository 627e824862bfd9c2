"""The hidden per-request record of an episode (simulation only): ``privileged.jsonl``.

Before every request t the harness reads the simulator's ground truth through a
:class:`PrivilegedSource` and writes one ``state`` line: the 36 critic features x(s_t),
milestones, goals satisfied, held / ever-held of the active goal's target, whether the host judges
the scene solved, and a handle to a backend snapshot of s_t. After request t it writes a
``request`` line (physical actions, failed ones, Python-error-only, perception-only, the
capabilities called) and, at the end, the final state s_{T+1} and a ``terminal`` line with the
outcome, the return R and the costs c_t (:mod:`captain_ros.harness.record.returns`).

The file sits beside ``trajectory.jsonl`` but the context renderer never reads it, and nothing of
it reaches the policy. :func:`load_episode_record` reads it back as a typed
:class:`EpisodeLearningRecord` for datasets, the critic, RL and RE-0.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from captain_ros.core.episode_folder import EpisodeFiles, read_jsonl_numbered
from captain_ros.core.errors import RecordError
from captain_ros.core.privileged import PrivilegedState
from captain_ros.harness.record.episode_record import EpisodeRecord


class PrivilegedSource(Protocol):
    """Where the harness reads ground truth (in-process backend, or the robot node's services)."""

    def state(self) -> PrivilegedState:
        """The current ground truth."""

    def snapshot(self) -> str | None:
        """Store a backend snapshot of the current state; its handle (``None``: unavailable)."""


@dataclass(frozen=True)
class StateRecord:
    """s_t, recorded before request t (t = 1..T); t = T + 1 is the final state."""

    t: int
    features: np.ndarray
    milestones: tuple[bool, ...]
    goals_satisfied: tuple[bool, ...]
    held: bool
    ever_held: bool
    solved: bool
    snapshot: str | None
    time_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "state",
            "t": self.t,
            "features": [float(v) for v in self.features],
            "milestones": list(self.milestones),
            "goals_satisfied": list(self.goals_satisfied),
            "held": self.held,
            "ever_held": self.ever_held,
            "solved": self.solved,
            "snapshot": self.snapshot,
            "time_s": self.time_s,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StateRecord:
        return cls(
            int(d["t"]),
            np.asarray(d["features"], dtype=np.float32),
            tuple(bool(v) for v in d["milestones"]),
            tuple(bool(v) for v in d["goals_satisfied"]),
            bool(d["held"]),
            bool(d["ever_held"]),
            bool(d["solved"]),
            d.get("snapshot"),
            float(d.get("time_s", 0.0)),
        )


@dataclass(frozen=True)
class RequestRecord:
    """What request t did, for costs and credit."""

    t: int
    physical_actions: int
    failed_physical: int
    python_error_only: bool
    perception_only: bool
    capabilities: tuple[str, ...]
    cost: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "request",
            "t": self.t,
            "physical_actions": self.physical_actions,
            "failed_physical": self.failed_physical,
            "python_error_only": self.python_error_only,
            "perception_only": self.perception_only,
            "capabilities": list(self.capabilities),
            "cost": self.cost,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RequestRecord:
        return cls(
            int(d["t"]),
            int(d["physical_actions"]),
            int(d["failed_physical"]),
            bool(d["python_error_only"]),
            bool(d["perception_only"]),
            tuple(str(c) for c in d["capabilities"]),
            float(d.get("cost", 0.0)),
        )


@dataclass(frozen=True)
class EpisodeLearningRecord:
    """Everything the learning layer reads about one episode (see records.md of the team)."""

    task: str
    seed: int
    policy: str
    outcome: str
    host_success: bool
    strict_success: bool
    return_R: float
    states: tuple[StateRecord, ...]
    requests: tuple[RequestRecord, ...]
    group: str
    out_dir: str

    @property
    def costs(self) -> list[float]:
        return [r.cost for r in self.requests]


class PrivilegedRecorder:
    """Writes ``privileged.jsonl`` of one episode (the harness calls it; it never raises into
    the loop: a failing source is logged once and recording stops)."""

    def __init__(
        self,
        path: Path,
        task: Any,
        source: PrivilegedSource,
        log: Callable[[str], None],
        sink: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.path = path
        self.sink = sink
        self.task = task
        self.source = source
        self.log = log
        self.tracker = task.tracker()
        self.states: list[StateRecord] = []
        self.requests: list[RequestRecord] = []
        self.ok = True
        self._fh = path.open("w")
        self.last_state: PrivilegedState | None = None
        self._pending: tuple[StateRecord, PrivilegedState, Any] | None = None

    def observe(self, t: int) -> StateRecord | None:
        """Read the current ground truth as s_t (not yet written: :meth:`commit` does that once
        request t is really made; the harness may end the episode on it instead)."""
        if not self.ok:
            return None
        try:
            s = self.source.state()
            probe = self.task.tracker()  # the tracker as it would be with s_t folded in
            probe.restore(self.tracker.snapshot())
            probe.update(s)
            goals = tuple(bool(g.satisfied(s)) for g in self.task.goals)
            active = next(
                (g for g, done in zip(self.task.goals, goals, strict=True) if not done),
                self.task.goals[-1],
            )
            target = s.objects.get(active.target)
            rec = StateRecord(
                t=t,
                features=self.task.features(s, probe),
                milestones=tuple(bool(m) for m in self.task.milestones(s)),
                goals_satisfied=goals,
                held=bool(target is not None and target.held),
                ever_held=bool(active.target in probe.ever_held),
                solved=all(goals),
                snapshot=None,
                time_s=s.time_s,
            )
        except Exception as exc:  # noqa: BLE001 - a lost ground truth ends recording, not the episode
            self.log(f"privileged state unavailable at request {t}: {type(exc).__name__}: {exc}")
            self.ok = False
            return None
        self._pending = (rec, s, probe)
        return rec

    def commit(self) -> StateRecord | None:
        """Write the state :meth:`observe` read (with a backend snapshot handle) as s_t."""
        if not self.ok or self._pending is None:
            return None
        rec, s, probe = self._pending
        self._pending = None
        try:
            handle = self.source.snapshot()
        except Exception as exc:  # noqa: BLE001
            self.log(f"snapshot failed at request {rec.t}: {type(exc).__name__}: {exc}")
            handle = None
        rec = replace(rec, snapshot=handle)
        self.tracker = probe
        self.last_state = s
        self.states.append(rec)
        self._write(rec.to_dict())
        return rec

    def resume_from(
        self,
        states: Sequence[StateRecord],
        requests: Sequence[RequestRecord],
        tracker_state: dict[str, Any] | None,
    ) -> None:
        """Continue a recorded episode at a restored decision point: the states and requests of
        its prefix are written again and the task tracker's memory is put back (RE-0)."""
        self.states = list(states)
        self.requests = list(requests)
        if tracker_state is not None:
            self.tracker.restore(tracker_state)
        for i, st in enumerate(self.states):
            self._write(st.to_dict())
            if i < len(self.requests):
                self._write(self.requests[i].to_dict())

    def record_request(self, rec: RequestRecord) -> None:
        if self.ok:
            self.requests.append(rec)
            self._write(rec.to_dict())

    def solved_streak(self, latest: StateRecord | None = None) -> int:
        """Consecutive most recent states (``latest`` first, then the committed ones) in which
        every goal held."""
        n = 0
        for s in ([latest] if latest is not None else []) + self.states[::-1]:
            if not s.solved:
                break
            n += 1
        return n

    def final_rung(self) -> int:
        return self.tracker.final_rung(self.last_state) if self.last_state is not None else 0

    def final_state(self, t: int) -> StateRecord | None:
        """Read and write the final state s_{T+1} (``t = T + 1``)."""
        self._pending = None
        if self.observe(t) is None:
            return None
        return self.commit()

    def finish(self, record: EpisodeRecord, costs: Sequence[float]) -> None:
        """Write the terminal line and close the file."""
        if self.ok:
            self._write(
                {
                    "type": "terminal",
                    "outcome": record.outcome,
                    "host_success": record.host_success,
                    "strict_success": record.strict_success,
                    "return_R": record.return_R,
                    "costs": list(costs),
                    "rung": self.final_rung(),
                    "n_rungs": len(self.task.milestone_names),
                }
            )
        self._fh.close()

    def _write(self, obj: dict[str, Any]) -> None:
        self._fh.write(json.dumps(obj) + "\n")
        self._fh.flush()
        if self.sink is not None:
            self.sink(obj)


@dataclass(frozen=True)
class PrivilegedLines:
    """``privileged.jsonl`` parsed: its state and request lines in order, and its terminal line
    (``None``: the episode did not finish, or the file is absent)."""

    states: tuple[StateRecord, ...]
    requests: tuple[RequestRecord, ...]
    terminal: dict[str, Any] | None


def read_privileged(files: EpisodeFiles, *, missing_ok: bool = False) -> PrivilegedLines:
    """Parse ``privileged.jsonl`` (the one parser of it: the learning record and RE-0's
    :class:`~captain_ros.harness.record.recorded.RecordedEpisode` read it here); raises
    :class:`RecordError` naming the file and the line of a malformed one or of an unknown type.
    ``missing_ok``: an absent file (an episode recorded without privileged state, e.g. on
    hardware) is empty rather than an error."""
    path = files.privileged
    if not path.exists():
        if missing_ok:
            return PrivilegedLines((), (), None)
        raise RecordError(f"{path}: missing (recorded without privileged state, e.g. on hardware)")
    states: list[StateRecord] = []
    requests: list[RequestRecord] = []
    terminal: dict[str, Any] | None = None
    for n, d in read_jsonl_numbered(path):
        try:
            kind = d.get("type")
            if kind == "state":
                states.append(StateRecord.from_dict(d))
            elif kind == "request":
                requests.append(RequestRecord.from_dict(d))
            elif kind == "terminal":
                terminal = d
            else:
                raise ValueError(f"unknown line type {kind!r}")
        except (ValueError, KeyError, TypeError) as exc:
            raise RecordError(f"{path}:{n}: {exc}") from exc
    return PrivilegedLines(tuple(states), tuple(requests), terminal)


def load_episode_record(folder: str | Path) -> EpisodeLearningRecord:
    """Read an episode folder's ``summary.json`` + ``privileged.jsonl``; raises
    :class:`RecordError` naming the file and the problem."""
    files = EpisodeFiles(Path(folder))
    try:
        rec = EpisodeRecord.from_dict(files.read_summary())
    except RecordError as exc:
        raise RecordError(
            f"{exc} (not an episode folder?)" if not files.has_summary() else str(exc)
        ) from exc
    except (ValueError, TypeError) as exc:
        raise RecordError(f"{files.summary}: not a valid episode summary ({exc})") from exc
    lines = read_privileged(files)
    if lines.terminal is None:
        raise RecordError(f"{files.privileged}: no terminal line (the episode did not finish)")
    requests = list(lines.requests)
    costs = lines.terminal.get("costs") or []
    if len(costs) == len(requests):
        requests = [replace(r, cost=float(c)) for r, c in zip(requests, costs, strict=True)]
    if len(lines.states) != len(requests) + 1:
        raise RecordError(
            f"{files.privileged}: {len(lines.states)} state lines for {len(requests)} "
            "requests (expected one more state than requests)"
        )
    return EpisodeLearningRecord(
        task=rec.task,
        seed=rec.seed,
        policy=rec.policy,
        outcome=rec.outcome,
        host_success=rec.host_success,
        strict_success=rec.strict_success,
        return_R=float(lines.terminal.get("return_R") or 0.0),
        states=lines.states,
        requests=tuple(requests),
        group=f"{rec.task}:{rec.seed}",
        out_dir=str(files.root),
    )
