"""Starting the episode loop at a restored decision point (RE-0): :class:`EpisodeResume`.

:func:`captain_ros.research.re0.decision_points.restore_decision_point` builds one;
:func:`captain_ros.harness.episode.loop.run_episode` takes it as ``resume=``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from captain_ros.harness.episode.budgets import BudgetTracker
from captain_ros.harness.episode.calls import EpisodeCalls
from captain_ros.harness.episode.gate import CompletionGate
from captain_ros.harness.record.history import History
from captain_ros.harness.record.privileged_log import RequestRecord, StateRecord
from captain_ros.harness.record.returns import RequestCounts
from captain_ros.harness.sandbox.session import PythonSession


@dataclass
class EpisodeResume:
    """Start the loop at a restored decision point t instead of at the beginning (RE-0).

    Built by :func:`captain_ros.research.re0.decision_points.restore_decision_point`, which has already
    put the robot side back to s_t and rehydrated the session; the loop then goes on as the
    recorded episode would have from request ``t``. It does not observe the scene first and does
    not call ``policy.reset`` (the caller positioned the policy at h_t). The new folder gets the
    recorded lines of requests 1..t-1 first, so it holds one whole episode.

    Attributes:
        t: The next request index (>= 1).
        history: h_t (turns 1..t-1).
        session: The rehydrated session (the loop closes it at the end).
        gate: The completion gate with the measurements and decisions of requests 1..t-1.
        physical_actions / wall_used_s: Budgets used before request t ([count], [s]).
        calls / failed_physical / backend_s: Robot-call counters before request t.
        counts: Per-request cost inputs of requests 1..t-1.
        model_s / prompt_tokens / completion_tokens / malformed: Totals before request t.
        start_line: The recorded ``episode_start`` line (written with ``resumed_from`` added).
        prefix_lines: The recorded ``request`` lines 1..t-1 (written verbatim).
        privileged_states / privileged_requests / task_tracker: The hidden record of requests
            1..t-1 and the task tracker's memory before s_t (``None``: no privileged record).
        resumed_from: Where this decision point came from (folder, t), for the record.
    """

    t: int
    history: History
    session: PythonSession
    gate: CompletionGate
    physical_actions: int = 0
    wall_used_s: float = 0.0
    calls: int = 0
    failed_physical: int = 0
    backend_s: float = 0.0
    counts: tuple[RequestCounts, ...] = ()
    model_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed: int = 0
    start_line: dict[str, Any] = field(default_factory=dict)
    prefix_lines: tuple[dict[str, Any], ...] = ()
    privileged_states: tuple[StateRecord, ...] | None = None
    privileged_requests: tuple[RequestRecord, ...] = ()
    task_tracker: dict[str, Any] | None = None
    resumed_from: dict[str, Any] = field(default_factory=dict)


def apply_counters(resume: EpisodeResume, tracker: BudgetTracker, calls: EpisodeCalls) -> None:
    """Budgets and call counters as they stood before request ``resume.t``."""
    tracker.requests = resume.t - 1
    tracker.physical_actions = resume.physical_actions
    tracker._t0 -= resume.wall_used_s  # the wall budget keeps counting the recorded prefix
    calls.calls, calls.failed_physical, calls.backend_s = (
        resume.calls,
        resume.failed_physical,
        resume.backend_s,
    )
    calls.finish_accepted = resume.gate.accepted
