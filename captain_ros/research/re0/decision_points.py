"""Decision-point snapshots of a whole episode (RE-0 item 1): restore s_t, continue bit-identically.

Before every request t the complete episode state is restorable. It has two halves:

- **robot side** (physics and backend RNG, noise streams, safety layer, perception store, motion
  history; :mod:`captain_ros.harness.record.robot_state`). In the process that ran the episode,
  :class:`DecisionPointSource` (the episode's privileged source) keeps a snapshot of it under the
  handle ``privileged.jsonl`` records for s_t. In any other process (an evaluation or
  verification worker), :func:`rebuild_robot_side` re-executes the recorded robot calls of
  requests 1..t-1 on a fresh robot of the same scene and noise draw, checking every Result
  against the record and s_t's 36 features against ``privileged.jsonl``, and snapshots that.
- **harness side** (history h_t and its context, budgets, gate measurements and decisions, the
  task tracker, call counters, and the Python session's variables). Rebuilt from
  ``trajectory.jsonl`` by re-executing the recorded cells in a fresh sandbox against the recorded
  Results (:mod:`captain_ros.research.re0.replay`), checked cell by cell, variables included.

:func:`restore_decision_point` does both and returns an
:class:`~captain_ros.harness.episode.resume.EpisodeResume` for
:func:`~captain_ros.harness.episode.loop.run_episode`; :func:`rehydrate_policy` positions a stateful
policy (the scripted expert) at h_t by replaying its own prefix. Restoring is refused with a
:class:`~captain_ros.harness.record.robot_state.RestoreRefused` naming the reason whenever identity
cannot be guaranteed: this is RE-0's Valid predicate (:func:`check_restorable` is its static
part; the replays are its dynamic part).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
from captain_ros.harness.episode.resume import EpisodeResume
from captain_ros.harness.record.history import History
from captain_ros.harness.record.recorded import EXTRA_KEY, RecordedEpisode
from captain_ros.harness.record.returns import RequestCounts
from captain_ros.harness.record.robot_state import RestoreRefused, restore_robot_side
from captain_ros.harness.record.trajectory import messages_sha256
from captain_ros.harness.sandbox.session import SessionConfig
from captain_ros.policy.base import Policy
from captain_ros.policy.toolcalls import parse_reply
from captain_ros.research.re0.determinism import Validity, check_restorable
from captain_ros.research.re0.replay import replay_session
from captain_ros.research.re0.robot_points import (
    DecisionPointSource,
    HandleRestorer,
    RobotPoint,
    check_identity,
    point_from_source,
    rebuild_robot_side,
    robot_identity,
    via_handles,
)

__all__ = [
    "EXTRA_KEY",
    "DecisionPointSource",
    "HandleRestorer",
    "RecordedEpisode",
    "RestoreRefused",
    "RobotPoint",
    "Validity",
    "check_restorable",
    "point_from_source",
    "rebuild_robot_side",
    "rehydrate_policy",
    "restore_decision_point",
    "robot_identity",
]


def restore_decision_point(
    rec: RecordedEpisode | str | Path,
    t: int,
    service: Any,
    task: Any,
    out_dir: str | Path,
    *,
    point: RobotPoint | None = None,
    source: DecisionPointSource | None = None,
    restorer: HandleRestorer | None = None,
    session_config: SessionConfig | None = None,
) -> EpisodeResume:
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
        prefix_states = via_handles(rec, t, restorer)
    else:
        if point is None and source is not None:
            point = point_from_source(rec, t, source)
        if point is None:
            point = rebuild_robot_side(rec, t, service, task)
        if point.t != t:
            raise RestoreRefused(f"the robot point is for request {point.t}, not {t}")
        restore_robot_side(service, point.snapshot)
        check_identity(rec, service)  # after the restore: the snapshot brings its noise draw back
        prefix_states = point.prefix_states
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    history = rec.history().upto(t)
    _copy_images(rec.folder, out, history)
    sess_rec = rec.start["session"]
    cfg = replace(
        session_config or SessionConfig(),
        hash_seed=sess_rec["hash_seed"],
        rng_seed=sess_rec.get("rng_seed"),
        prelude=str(sess_rec.get("prelude") or ""),
    )
    budgets = Budgets(**rec.start["budgets"])
    h = replay_session(
        rec.requests,
        t,
        EpisodeFiles(out).workspace,
        str(rec.start["task_md"]),
        task.gate_check,
        budgets,
        cfg,
        log_path=EpisodeFiles(out).session_log,
    )
    prefix = rec.requests[: t - 1]
    tracker_state = None
    if rec.states:
        tr = task.tracker()
        for s in prefix_states:
            tr.update(s)
        tracker_state = tr.snapshot()
    counts = tuple(
        RequestCounts(p, f, any(s.solved for s in rec.states[:k]))
        for k, (p, f) in enumerate(h.tallies, 1)
    )
    return EpisodeResume(
        t=t,
        history=history,
        session=h.session,
        gate=h.gate,
        physical_actions=h.tracker.physical_actions,
        wall_used_s=float((prefix[-1].get("budget") or {}).get("wall_s_used", 0.0))
        if prefix
        else 0.0,
        calls=h.calls.calls,
        failed_physical=h.calls.failed_physical,
        backend_s=sum(float(r.get("backend_s") or 0.0) for r in prefix),
        counts=counts,
        model_s=sum(float(r.get("model_s") or 0.0) for r in prefix),
        prompt_tokens=sum(int(r.get("prompt_tokens") or 0) for r in prefix),
        completion_tokens=sum(int(r.get("completion_tokens") or 0) for r in prefix),
        malformed=h.malformed,
        start_line={k: v for k, v in rec.start.items() if k != "resumed_from"},
        prefix_lines=tuple(prefix),
        privileged_states=rec.states[: t - 1] if rec.states else None,
        privileged_requests=rec.privileged_requests[: t - 1],
        task_tracker=tracker_state,
        resumed_from={"folder": str(rec.folder), "t": t},
    )


def _copy_images(src: Path, dst: Path, history: History) -> None:
    refs = list(history.initial_images) + [
        r for turn in history.turns for o in turn.outputs for r in o.images
    ]
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
        msgs = render(history.upto(k), ctx)  # counted as recorded (ctx.tokenizer)
        if req.get("context_sha256") and messages_sha256(msgs) != req["context_sha256"]:
            raise RestoreRefused(
                f"request {k}: the rendered history differs from what the policy saw"
            )
        reply = policy.act(msgs, [PYTHON_TOOL_SCHEMA])
        parsed = parse_reply(reply.content, list(reply.tool_calls) or None, reply.reasoning)
        if list(parsed.code_cells) != [str(c.get("code", "")) for c in req.get("calls") or []]:
            raise RestoreRefused(f"request {k}: the policy does not reproduce its recorded reply")
