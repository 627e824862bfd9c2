"""Opening an episode: the folder, the budget tracker, the gate, the call handler, the session and
the logs, ``TASK.md``, and the start line (fresh, or the recorded one when resuming).

:func:`open_episode` is the first step of :class:`~captain_ros.harness.episode.loop.Episode`;
it returns an :class:`Opened` and calls nothing back in the loop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from captain_ros.core.episode_folder import TASK_MD, EpisodeFiles
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.harness.episode.budgets import BudgetTracker
from captain_ros.harness.episode.calls import EpisodeCalls, observe_initial
from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, ContextConfig
from captain_ros.harness.episode.gate import CompletionGate
from captain_ros.harness.episode.observers import Observers
from captain_ros.harness.episode.parts import EpisodeParts
from captain_ros.harness.episode.profiles import PromptProfile, library_prelude, library_task_md
from captain_ros.harness.episode.resume import apply_counters
from captain_ros.harness.episode.taskmd import render_task_md
from captain_ros.harness.record.history import History
from captain_ros.harness.record.privileged_log import PrivilegedRecorder
from captain_ros.harness.record.trajectory import TrajectoryWriter
from captain_ros.harness.sandbox.session import PythonSession, SessionConfig

log = logging.getLogger(__name__)

__all__ = ["Opened", "open_episode"]


@dataclass
class Opened:
    """What an open episode runs with (the objects are shared with the loop, which mutates them).

    Attributes:
        tracker / gate / calls: The budgets, the completion gate and the robot-call handler.
        sess / own_session: The Python session and whether the episode closes it.
        writer / recorder: ``trajectory.jsonl`` and, with a privileged source, its recorder.
        session_info: The session's record (seeds, prelude; its layers once started).
        task_md: The TASK.md text the policy reads.
        history: The history before request 1 (a resumed one's recorded history).
        start_line / prefix_lines: The start line to write, and a resumed episode's recorded lines.
        t_start: The clock when the episode opened [s].
    """

    tracker: BudgetTracker
    gate: CompletionGate
    calls: EpisodeCalls
    sess: PythonSession
    own_session: bool
    writer: TrajectoryWriter
    recorder: PrivilegedRecorder | None
    session_info: dict[str, Any]
    task_md: str
    history: History
    start_line: dict[str, Any]
    prefix_lines: tuple[dict[str, Any], ...]
    t_start: float


def open_episode(
    parts: EpisodeParts,
    profile: PromptProfile,
    system_prompt: str,
    ctx: ContextConfig,
    obs: Observers,
) -> Opened:
    """Make the folder, budgets, gate, call handler, session and logs; write TASK.md; build the
    start line (``parts.resume``: the recorded one, with its history and counters)."""
    p = parts
    recorded = p.resume.start_line if p.resume is not None else {}
    p.out_dir.mkdir(parents=True, exist_ok=True)
    tracker = BudgetTracker(p.budgets, p.clock)
    t_start = p.clock()
    gate = p.resume.gate if p.resume is not None else CompletionGate(p.task.gate_check)
    calls = EpisodeCalls(p.robot, tracker, gate, p.out_dir, observer=obs.on_call)
    if p.resume is not None:
        apply_counters(p.resume, tracker, calls)
    sess, own_session = _session(p, profile)
    files = EpisodeFiles(p.out_dir)
    task_md = str(recorded.get("task_md") or "") or render_task_md(
        p.task,
        p.seed,
        p.budgets,
        profile.compact_api,
        library_task_md(profile),
        profile.reference,
    )
    files.task_md.write_text(task_md)
    (sess.workspace / TASK_MD).write_text(task_md)  # the session's copy: the policy reads it
    writer = TrajectoryWriter(files.trajectory)
    recorder = (
        PrivilegedRecorder(files.privileged, p.task, p.privileged, log.warning, obs.on_privileged)
        if p.privileged is not None
        else None
    )
    session_info: dict[str, Any] = {
        "hash_seed": sess.config.hash_seed,
        "rng_seed": sess.config.rng_seed,
    }
    if sess.config.prelude:  # the record holds what ran (a replay must run the same)
        session_info["prelude"] = sess.config.prelude
    task_name = str(getattr(p.task, "name", "task"))
    r = p.resume
    if r is None:
        p.policy.reset(task_name, p.seed)
        history = History(system_prompt, task_md, observe_initial(p.robot, p.out_dir))
        start_line = {
            "type": "episode_start",
            "task": task_name,
            "seed": p.seed,
            "policy": p.options.policy_name,
            "backend": p.options.backend_name,
            "profile": profile.name,
            "system": system_prompt,
            "task_md": task_md,
            "initial_images": [i.to_dict() for i in history.initial_images],
            "budgets": p.budgets.to_dict(),
            "context": ctx.to_dict(),
            "tools": [PYTHON_TOOL_SCHEMA],
            "session": session_info,
        }
        prefix_lines: tuple[dict[str, Any], ...] = ()
    else:
        history = r.history
        start_line = {
            **r.start_line,
            "policy": p.options.policy_name,
            "session": session_info,
            "resumed_from": dict(r.resumed_from),
        }
        prefix_lines = tuple(r.prefix_lines)
        if recorder is not None and r.privileged_states is not None:
            recorder.resume_from(r.privileged_states, r.privileged_requests, r.task_tracker)
    return Opened(
        tracker,
        gate,
        calls,
        sess,
        own_session,
        writer,
        recorder,
        session_info,
        task_md,
        history,
        start_line,
        prefix_lines,
        t_start,
    )


def _session(p: EpisodeParts, profile: PromptProfile) -> tuple[PythonSession, bool]:
    """The session (the resumed one, the one given, or a new one) and whether the episode owns it."""
    if p.resume is not None:
        return p.resume.session, True
    prelude = library_prelude(profile)
    config = (
        replace(p.session_config or SessionConfig(), prelude=prelude)
        if prelude
        else p.session_config
    )
    if p.session is not None:
        if p.session.config.prelude != prelude:
            raise InvalidArgumentError(
                f"the session given does not start with the {profile.name!r} "
                "profile's helper library"
            )
        return p.session, False
    files = EpisodeFiles(p.out_dir)
    return PythonSession(files.workspace, config, log_path=files.session_log), True
