"""Decision-point snapshots of a whole episode (RE-0 item 1): restore s_t, continue bit-identically.

Before every request t the complete episode state is restorable. It has two halves:

- **robot side** (physics and backend RNG, noise streams, safety layer, perception store, motion
  history; :mod:`captain_ros.harness.robot_state`). In the process that ran the episode,
  :class:`DecisionPointSource` (the episode's privileged source) keeps a snapshot of it under the
  handle ``privileged.jsonl`` records for s_t. In any other process (an evaluation or
  verification worker), :func:`rebuild_robot_side` re-executes the recorded robot calls of
  requests 1..t-1 on a fresh robot of the same scene and noise draw, checking every Result
  against the record and s_t's 36 features against ``privileged.jsonl``, and snapshots that.
- **harness side** (history h_t and its context, budgets, gate measurements and decisions, the
  task tracker, call counters, and the Python session's variables). Rebuilt from
  ``trajectory.jsonl`` by re-executing the recorded cells in a fresh sandbox against the recorded
  Results (:mod:`captain_ros.harness.replay`), checked cell by cell, variables included.

:func:`restore_decision_point` does both and returns an
:class:`~captain_ros.harness.resume.EpisodeResume` for
:func:`~captain_ros.harness.episode.run_episode`; :func:`rehydrate_policy` positions a stateful
policy (the scripted expert) at h_t by replaying its own prefix. Restoring is refused with a
:class:`~captain_ros.harness.robot_state.RestoreRefused` naming the reason whenever identity
cannot be guaranteed: this is RE-0's Valid predicate (:func:`check_restorable` is its static
part; the replays are its dynamic part).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from captain_ros.api import registry
from captain_ros.core.errors import NotSupportedError
from captain_ros.core.privileged import PrivilegedState
from captain_ros.harness.budgets import Budgets
from captain_ros.harness.context import PYTHON_TOOL_SCHEMA, ContextConfig, approx_tokens, render
from captain_ros.harness.determinism import nondeterminism, seeds_generators
from captain_ros.harness.history import History
from captain_ros.harness.observers import EpisodeObserver
from captain_ros.harness.privileged_log import PRIVILEGED_FILE, RequestRecord, StateRecord
from captain_ros.harness.record import EpisodeRecord
from captain_ros.harness.replay import normalized, replay_session
from captain_ros.harness.resume import EpisodeResume
from captain_ros.harness.returns import RequestCounts
from captain_ros.harness.robot_state import (
    RestoreRefused,
    RobotSideSnapshot,
    capture_robot_side,
    restore_robot_side,
)
from captain_ros.harness.session import SessionConfig
from captain_ros.harness.trajectory import messages_sha256, read_records, turn_from_record
from captain_ros.policy.base import Policy
from captain_ros.policy.toolcalls import parse_reply

EXTRA_KEY = "decision_points"
"""Key of the record's ``extra`` where :class:`DecisionPointSource` notes the scene model key and
the noise draw of the episode."""


@dataclass(frozen=True)
class RecordedEpisode:
    """An episode folder read back for restoring: its log lines and hidden record."""

    folder: Path
    start: dict[str, Any]
    requests: tuple[dict[str, Any], ...]
    summary: dict[str, Any]
    states: tuple[StateRecord, ...]
    privileged_requests: tuple[RequestRecord, ...]

    @classmethod
    def load(cls, folder: str | Path) -> RecordedEpisode:
        """Read ``folder``; raises :class:`RestoreRefused` naming the file and the problem."""
        root = Path(folder)
        try:
            lines = read_records(root / "trajectory.jsonl")
            summary = json.loads((root / "summary.json").read_text())
        except FileNotFoundError as exc:
            raise RestoreRefused(f"{exc.filename}: missing (not a finished episode folder?)") from exc
        except (OSError, ValueError) as exc:
            raise RestoreRefused(f"{root}: unreadable episode log ({exc})") from exc
        start = next((r for r in lines if r.get("type") == "episode_start"), None)
        if start is None:
            raise RestoreRefused(f"{root / 'trajectory.jsonl'}: no episode_start line")
        requests = tuple(r for r in lines if r.get("type") == "request")
        states: list[StateRecord] = []
        priv_requests: list[RequestRecord] = []
        priv = root / PRIVILEGED_FILE
        if priv.exists():
            for n, line in enumerate(priv.read_text().splitlines(), 1):
                try:
                    d = json.loads(line)
                    if d.get("type") == "state":
                        states.append(StateRecord.from_dict(d))
                    elif d.get("type") == "request":
                        priv_requests.append(RequestRecord.from_dict(d))
                except (ValueError, KeyError, TypeError) as exc:
                    raise RestoreRefused(f"{priv}:{n}: {exc}") from exc
        return cls(root, start, requests, summary, tuple(states), tuple(priv_requests))

    @property
    def task(self) -> str:
        return str(self.start.get("task", ""))

    @property
    def seed(self) -> int:
        return int(self.start.get("seed", 0))

    @property
    def n_requests(self) -> int:
        return len(self.requests)

    @property
    def noted(self) -> dict[str, Any]:
        """What :class:`DecisionPointSource` noted about the robot (model key, noise draw)."""
        return dict((self.summary.get("extra") or {}).get(EXTRA_KEY) or {})

    def history(self) -> History:
        return History(str(self.start["system"]), str(self.start["task_md"]),
                       tuple(_image_refs(self.start.get("initial_images") or [])),
                       tuple(turn_from_record(r) for r in self.requests))


def _image_refs(items: Sequence[dict[str, Any]]) -> list[Any]:
    from captain_ros.harness.history import ImageRef

    return [ImageRef.from_dict(i) for i in items]


@dataclass(frozen=True)
class Validity:
    """RE-0's Valid predicate for one decision point: ``ok`` or the reason it is refused."""

    ok: bool
    reason: str = ""


def check_restorable(rec: RecordedEpisode, t: int) -> Validity:
    """The static part of the Valid predicate for restoring ``rec`` before request ``t``."""
    if not 1 <= t <= rec.n_requests:
        return Validity(False, f"t = {t} is outside the episode's requests 1..{rec.n_requests}")
    session = rec.start.get("session")
    if not isinstance(session, dict) or session.get("hash_seed") is None:
        return Validity(False, "the episode's session did not fix its hash seed (recorded before "
                               "decision points, or with hash_seed=None): set orders cannot be reproduced")
    rng_seeded = session.get("rng_seed") is not None
    for req in rec.requests[: t - 1]:
        k = int(req["t"])
        for j, cell in enumerate(req.get("calls") or [], 1):
            if cell.get("skipped"):
                continue
            if cell.get("timed_out") or cell.get("crashed"):
                what = "timed out" if cell.get("timed_out") else "crashed the session"
                return Validity(False, f"request {k}, cell {j} {what}: where it stopped is not reproducible")
            code = str(cell.get("code", ""))
            rng_seeded = rng_seeded or seeds_generators(code)
            why = nondeterminism(code, rng_seeded=rng_seeded, hash_seeded=True)
            if why:
                return Validity(False, f"request {k}, cell {j} is not reproducible: {why}")
    return Validity(True)


class DecisionPointSource(EpisodeObserver):
    """The privileged source of an in-process episode that snapshots the whole robot side before
    every request (in memory, the newest ``keep``), and notes the scene model key and noise draw
    in the record. Pass it as ``privileged=`` AND as an observer."""

    def __init__(self, service: Any, keep: int = 256) -> None:
        self.service = service
        self.keep = keep
        self.points: dict[str, tuple[RobotSideSnapshot, PrivilegedState]] = {}
        self._n = 0

    def state(self) -> PrivilegedState:
        return self.service.backend.privileged_state()

    def snapshot(self) -> str | None:
        try:
            snap = capture_robot_side(self.service)
        except NotSupportedError:
            return None
        self._n += 1
        handle = f"dp_{self._n:04d}"
        self.points[handle] = (snap, self.service.backend.privileged_state())
        while len(self.points) > self.keep:
            self.points.pop(next(iter(self.points)))
        return handle

    def amend(self, record: EpisodeRecord) -> EpisodeRecord:
        return replace(record, extra={**record.extra, EXTRA_KEY: robot_identity(self.service)})


def robot_identity(service: Any) -> dict[str, Any]:
    """The scene model key and noise draw of ``service``'s backend (what a rebuild must match)."""
    backend = service.backend
    key = None
    with contextlib.suppress(NotSupportedError):
        key = getattr(backend.snapshot(), "model_key", None)
    noise = getattr(backend, "noise_draw", None)
    return {"model_key": key, "noise": noise.to_dict() if noise is not None else None}


@dataclass(frozen=True)
class RobotPoint:
    """The robot side at s_t plus the ground truth of s_1..s_{t-1} (the task tracker's input)."""

    t: int
    snapshot: RobotSideSnapshot
    prefix_states: tuple[PrivilegedState, ...]


def point_from_source(rec: RecordedEpisode, t: int, source: DecisionPointSource) -> RobotPoint | None:
    """The in-memory decision point t of an episode recorded with ``source`` (None: not kept)."""
    if len(rec.states) < t:
        return None
    handles = [s.snapshot for s in rec.states[:t]]
    if any(h not in source.points for h in handles):
        return None
    snap = source.points[str(handles[-1])][0]
    return RobotPoint(t, snap, tuple(source.points[str(h)][1] for h in handles[:-1]))


class HandleRestorer(Protocol):
    """Restores the robot side from the snapshot store that recorded the episode, by the handles
    of ``privileged.jsonl`` (the robot node's services on the ROS graph:
    :class:`captain_ros.ros.decision_points.ServiceRestorer`)."""

    def restore(self, handle: str) -> None:
        """Restore snapshot ``handle``; raises :class:`RestoreRefused` with the store's reason."""

    def state(self) -> PrivilegedState:
        """The ground truth of the restored state."""


def _via_handles(rec: RecordedEpisode, t: int, restorer: HandleRestorer) -> tuple[PrivilegedState, ...]:
    """Visit s_1..s_{t-1} (their ground truth feeds the task tracker), then restore s_t."""
    handles = [s.snapshot for s in rec.states[:t]]
    if len(handles) < t or any(not h for h in handles):
        raise RestoreRefused(f"privileged.jsonl has no snapshot handle for every state s_1..s_{t}")
    states = []
    for h in handles[:-1]:
        restorer.restore(str(h))
        states.append(restorer.state())
    restorer.restore(str(handles[-1]))
    return tuple(states)


def _check_identity(rec: RecordedEpisode, service: Any) -> None:
    want, have = rec.noted, robot_identity(service)
    if want.get("model_key") and have.get("model_key") != want["model_key"]:
        raise RestoreRefused("the robot's scene model differs from the recorded one (another model key)")
    if "noise" in want and normalized(have.get("noise")) != normalized(want.get("noise")):
        raise RestoreRefused(f"the robot's noise draw {have.get('noise')} differs from the recorded "
                             f"{want.get('noise')}")


def rebuild_robot_side(rec: RecordedEpisode, t: int, service: Any, task: Any) -> RobotPoint:
    """Rebuild s_t on a fresh robot of the recorded scene by re-executing the recorded robot calls
    of requests 1..t-1 (the initial observation first), each checked against its recorded Result;
    s_t's features are checked against ``privileged.jsonl`` when it has them."""
    v = check_restorable(rec, t)
    if not v.ok:
        raise RestoreRefused(v.reason)
    backend = service.backend
    perception = getattr(service, "perception", None)
    if backend.time_s() != 0.0 or (perception is not None and len(perception.observations)):
        raise RestoreRefused("rebuilding needs a robot at the start of its scene (fresh backend and services)")
    _check_identity(rec, service)
    first = service.call("observe", {})
    want_handle = next((i.get("handle") for i in rec.start.get("initial_images") or []), None)
    if want_handle and (not first.success or (first.value or {}).get("handle") != want_handle):
        raise RestoreRefused("the initial observation does not reproduce the recorded one")
    states: list[PrivilegedState] = []
    for req in rec.requests[: t - 1]:
        states.append(backend.privileged_state())
        for cell in req.get("calls") or []:
            for call in cell.get("robot_calls") or []:
                cap = registry.CAPABILITY_BY_NAME.get(call.get("name"))
                result = call.get("result") or {}
                if cap is None or cap.service == "harness" or result.get("failure_category") == "budget_exhausted":
                    continue  # answered by the harness, never reached the robot
                got = service.call(call["name"], dict(call.get("kwargs") or {})).to_dict()
                got.pop("budget", None)
                want = {k: v for k, v in result.items() if k != "budget"}
                if normalized(got) != normalized(want):
                    raise RestoreRefused(f"request {req['t']}: {call['name']} returned another Result than "
                                         f"recorded ({str(got.get('receipt'))[:120]!r} vs "
                                         f"{str(want.get('receipt'))[:120]!r})")
    if len(rec.states) >= t:
        tracker = task.tracker()
        for s in states:
            tracker.update(s)
        now = backend.privileged_state()
        tracker.update(now)
        feats = task.features(now, tracker)
        if feats.tobytes() != rec.states[t - 1].features.tobytes():
            raise RestoreRefused(f"the rebuilt state s_{t} differs from the recorded one (features)")
    return RobotPoint(t, capture_robot_side(service), tuple(states))


def restore_decision_point(rec: RecordedEpisode | str | Path, t: int, service: Any, task: Any,
                           out_dir: str | Path, *, point: RobotPoint | None = None,
                           source: DecisionPointSource | None = None,
                           restorer: HandleRestorer | None = None,
                           session_config: SessionConfig | None = None) -> EpisodeResume:
    """Restore decision point ``t`` of a recorded episode into ``service`` and a fresh session in
    ``out_dir``; returns the :class:`EpisodeResume` to run the loop from request ``t``.

    The robot side comes from ``restorer`` (the store that recorded the episode, by handle: the
    ROS graph; ``service`` may then be None), else from ``point``, else from ``source`` (same
    process), else it is rebuilt (``service`` must then be fresh). Raises
    :class:`RestoreRefused` with the reason when identity cannot be guaranteed."""
    rec = rec if isinstance(rec, RecordedEpisode) else RecordedEpisode.load(rec)
    v = check_restorable(rec, t)
    if not v.ok:
        raise RestoreRefused(v.reason)
    if restorer is not None:
        prefix_states = _via_handles(rec, t, restorer)
    else:
        if point is None and source is not None:
            point = point_from_source(rec, t, source)
        if point is None:
            point = rebuild_robot_side(rec, t, service, task)
        if point.t != t:
            raise RestoreRefused(f"the robot point is for request {point.t}, not {t}")
        restore_robot_side(service, point.snapshot)
        _check_identity(rec, service)  # after the restore: the snapshot brings its noise draw back
        prefix_states = point.prefix_states
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    history = rec.history().upto(t)
    _copy_images(rec.folder, out, history)
    sess_rec = rec.start["session"]
    cfg = replace(session_config or SessionConfig(), hash_seed=sess_rec["hash_seed"],
                  rng_seed=sess_rec.get("rng_seed"))
    budgets = Budgets(**rec.start["budgets"])
    h = replay_session(rec.requests, t, out / "workspace", str(rec.start["task_md"]), task.gate_check,
                       budgets, cfg, log_path=out / "session.log")
    prefix = rec.requests[: t - 1]
    tracker_state = None
    if rec.states:
        tr = task.tracker()
        for s in prefix_states:
            tr.update(s)
        tracker_state = tr.snapshot()
    counts = tuple(RequestCounts(p, f, any(s.solved for s in rec.states[:k]))
                   for k, (p, f) in enumerate(h.tallies, 1))
    return EpisodeResume(
        t=t, history=history, session=h.session, gate=h.gate,
        physical_actions=h.tracker.physical_actions,
        wall_used_s=float((prefix[-1].get("budget") or {}).get("wall_s_used", 0.0)) if prefix else 0.0,
        calls=h.calls.calls, failed_physical=h.calls.failed_physical,
        backend_s=sum(float(r.get("backend_s") or 0.0) for r in prefix), counts=counts,
        model_s=sum(float(r.get("model_s") or 0.0) for r in prefix),
        prompt_tokens=sum(int(r.get("prompt_tokens") or 0) for r in prefix),
        completion_tokens=sum(int(r.get("completion_tokens") or 0) for r in prefix),
        malformed=h.malformed, start_line={k: v for k, v in rec.start.items() if k != "resumed_from"},
        prefix_lines=tuple(prefix),
        privileged_states=rec.states[: t - 1] if rec.states else None,
        privileged_requests=rec.privileged_requests[: t - 1], task_tracker=tracker_state,
        resumed_from={"folder": str(rec.folder), "t": t})


def _copy_images(src: Path, dst: Path, history: History) -> None:
    refs = list(history.initial_images) + [r for turn in history.turns for o in turn.outputs for r in o.images]
    for ref in refs:
        a, b = src / ref.path, dst / ref.path
        if a.is_file() and not b.exists():
            b.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(a, b)  # rollouts share the prefix's images without copying them
            except OSError:
                shutil.copy2(a, b)


def rehydrate_policy(policy: Policy, rec: RecordedEpisode, t: int) -> None:
    """Position a stateful ``policy`` at h_t: reset it, then let it answer h_1..h_{t-1} (rendered
    as recorded, each context hash checked); every reply must reproduce the recorded code.
    A policy whose reply depends only on the messages (a model endpoint) does not need this."""
    ctx = ContextConfig(**rec.start.get("context", {}))
    history = rec.history()
    policy.reset(rec.task, rec.seed)
    for req in rec.requests[: t - 1]:
        k = int(req["t"])
        msgs = render(history.upto(k), ctx, approx_tokens)
        if req.get("context_sha256") and messages_sha256(msgs) != req["context_sha256"]:
            raise RestoreRefused(f"request {k}: the rendered history differs from what the policy saw")
        reply = policy.act(msgs, [PYTHON_TOOL_SCHEMA])
        parsed = parse_reply(reply.content, list(reply.tool_calls) or None, reply.reasoning)
        if list(parsed.code_cells) != [str(c.get("code", "")) for c in req.get("calls") or []]:
            raise RestoreRefused(f"request {k}: the policy does not reproduce its recorded reply")
