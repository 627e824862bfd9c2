"""The episode loop: request -> policy -> python tool calls -> executed in order -> next observation.

An episode ends on a reply without a tool call, when ``finish()`` is accepted (``end_on_finish``),
when a budget (requests, wall time, physical actions) is spent, when even a compacted history
does not fit the model's window (``budget:context_tokens``), when an observer stops it at a
request boundary (a cancel, the critic's early stop), or, with privileged state, when every goal
has held for ``missed_finish_after`` consecutive requests without ``finish()`` (settled as a
missed finish, CaPtain section 3.3). Outcome labels follow the paper (``success_with_finish``,
``missed_finish``, ``false_finish``, ``budget_exhausted``, ``other_failure``). Malformed model
output (unparseable tool calls, unknown tools, empty code, syntax errors) becomes an observation
and counts as a request.

One run is an :class:`Episode` built from its :class:`EpisodeParts` (typed, frozen): ``open`` the
folder, session and logs (:mod:`.start`), ``announce`` the start, make ``request`` after request,
``settle`` the outcome (:mod:`.settle`) and ``close`` the record; each step is one method. Front ends assemble an episode with
:class:`~captain_ros.harness.episode.setup.EpisodeSetup`; :func:`run_episode` is the one-call form.
The loop writes ``trajectory.jsonl``, ``TASK.md``, images, ``summary.json`` (the
:class:`~captain_ros.harness.record.episode_record.EpisodeRecord`) and, with a privileged source,
``privileged.jsonl``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from captain_ros.api.service import RobotCaller
from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.episode.cells import CellsOutcome, run_cells
from captain_ros.harness.episode.context import ContextConfig, context_tokens, render
from captain_ros.harness.episode.observers import EpisodeObserver, EpisodeStart, Observers
from captain_ros.harness.episode.parts import EpisodeOptions, EpisodeParts, Totals
from captain_ros.harness.episode.profiles import get_profile
from captain_ros.harness.episode.reply import ask, parse
from captain_ros.harness.episode.resume import EpisodeResume
from captain_ros.harness.episode.settle import settle as settle_episode
from captain_ros.harness.episode.start import open_episode
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.harness.record.history import Turn
from captain_ros.harness.record.privileged_log import (
    PrivilegedSource,
    RequestRecord,
    StateRecord,
)
from captain_ros.harness.record.returns import RequestCounts
from captain_ros.harness.record.trajectory import messages_sha256
from captain_ros.harness.sandbox.session import PythonSession, SessionConfig
from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.policy.toolcalls import ParsedReply

log = logging.getLogger(__name__)

__all__ = ["Episode", "run_episode"]


class Episode:
    """One run of the loop over :class:`EpisodeParts`; :meth:`run` once, get the record."""

    def __init__(self, parts: EpisodeParts) -> None:
        self.parts = parts
        recorded = parts.resume.start_line if parts.resume is not None else {}
        self.recorded = recorded  # a continuation renders as its record did
        self.profile = get_profile(str(recorded.get("profile") or parts.options.profile))
        self.system_prompt = parts.options.system_prompt or self.profile.system_prompt
        self.ctx = parts.context_config or (
            ContextConfig(**recorded["context"])
            if recorded.get("context")
            else self.profile.context
        )
        self.task_name = str(getattr(parts.task, "name", "task"))
        self.obs = Observers(parts.observers)
        self.totals = Totals.before(parts.resume)
        self.end_reason = ""
        self.settle_budget: str | None = None

    def run(self) -> EpisodeRecord:
        """Run the episode; write its folder; return its record."""
        self.open()
        self.announce()
        try:
            while self.request():
                pass
        finally:
            if self.own_session:
                self.sess.close()
        return self.close(self.settle())

    # -- open: budgets, calls, session, files --------------------------------------------------

    def open(self) -> None:
        """Open the episode (:func:`~captain_ros.harness.episode.start.open_episode`): the folder,
        budgets, gate, call handler, session, logs, TASK.md and the start line."""
        o = self.opened = open_episode(
            self.parts, self.profile, self.system_prompt, self.ctx, self.obs
        )
        self.tracker, self.gate, self.calls = o.tracker, o.gate, o.calls
        self.sess, self.own_session = o.sess, o.own_session
        self.writer, self.recorder, self.history = o.writer, o.recorder, o.history

    # -- announce ------------------------------------------------------------------------------

    def announce(self) -> None:
        """Start the session (its start-up is paid once, not inside request 1; the record says its
        layers), write the start line (and a resumed episode's recorded requests), tell observers."""
        p = self.parts
        try:
            self.sess.start()  # (a strict session that lacks one raises SandboxUnavailableError here)
        except RuntimeError:
            log.exception("session start failed; the first cell will retry")
        self.opened.session_info["layers"] = dict(self.sess.layers)
        try:
            self.writer.write(self.opened.start_line)
            for line in self.opened.prefix_lines:
                self.writer.write(line)
            self.obs.on_start(
                EpisodeStart(
                    self.task_name,
                    int(p.seed),
                    p.options.policy_name,
                    p.options.backend_name,
                    str(p.out_dir),
                    p.budgets.to_dict(),
                )
            )
            self.obs.on_trajectory(self.opened.start_line)
            for line in self.opened.prefix_lines:
                self.obs.on_trajectory(line)
        except BaseException:  # the loop's own cleanup is not reached: close the child here
            if self.own_session:
                self.sess.close()
            raise

    # -- one request ---------------------------------------------------------------------------

    def request(self) -> bool:
        """Make request t (unless the episode ends before it); whether another may follow."""
        t = self.tracker.requests + 1
        state = self._ends_before(t)
        if self.end_reason:
            return False
        solved_before = (
            self.recorder is not None
            and state is not None
            and (state.solved or any(s.solved for s in self.recorder.states))
        )
        if self.recorder is not None:
            self.recorder.commit()
        t_request = self.parts.clock()
        messages = render(self.history, self.ctx)  # counted by ctx.tokenizer, as recorded
        if context_tokens(messages, self.ctx) > self.ctx.hard_limit_tokens:
            self.end_reason = "budget:context_tokens"  # even the last turn alone does not fit
            return False
        reply, dt_model = self._ask(t, messages)
        backend_before = self.calls.backend_s
        parsed = parse(reply)
        gate_before = len(self.gate.decisions)
        done, turn = self._execute(t, parsed)
        backend_dt = self.calls.backend_s - backend_before
        self._tally(t, done, solved_before)
        entry = {
            "type": "request",
            "t": t,
            "reasoning": parsed.reasoning,
            "content": reply.content,
            "tool_calls_raw": list(reply.tool_calls),
            "calls": done.logged,
            "malformed": list(parsed.errors),
            "notice": turn.notice,
            "budget": self.tracker.snapshot(),
            "gate": [d.to_dict() for d in self.gate.decisions[gate_before:]],
            "model_s": dt_model,
            "backend_s": backend_dt,
            "harness_s": max(0.0, self.parts.clock() - t_request - dt_model - backend_dt),
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "policy_info": dict(reply.info),  # e.g. the faults a scripted-faulty expert injected
            "context_sha256": messages_sha256(messages),
        }
        self.writer.write(entry)
        self.obs.on_trajectory(entry)
        self.obs.on_request(t, entry)
        if self.end_reason:
            return False
        if self.calls.finish_accepted and self.parts.options.end_on_finish:
            self.end_reason = "finish"
            return False
        return True

    def _ends_before(self, t: int) -> StateRecord | None:
        """Read s_t; set ``end_reason`` when a budget, the missed-finish stop or an observer ends
        the episode before request ``t``."""
        spent = (
            self.tracker.exhausted()
        )  # requests or wall time; physical: only once a call is refused
        spent = (spent if spent != "physical_actions" else None) or self.calls.exhausted
        if spent:
            self.end_reason = f"budget:{spent}"
            return None
        state = self.recorder.observe(t) if self.recorder is not None else None
        after = self.parts.options.missed_finish_after
        if (
            state is not None
            and after > 0
            and self.recorder is not None
            and self.recorder.solved_streak(state) > after
        ):
            self.end_reason = "missed_finish_stop"  # all goals held for N requests without finish()
            return state
        if state is not None:
            self.obs.on_state(t, state)
        stop = self.obs.before_request(t)
        if stop is not None:
            self.end_reason = f"stop:{stop.reason}"
            self.settle_budget = stop.reason if stop.settle_as_budget else None
        return state

    def _ask(self, t: int, messages: list[dict[str, Any]]) -> tuple[PolicyReply, float]:
        """The policy's reply to request ``t`` and the model time it took [s]."""
        t0 = self.parts.clock()
        reply, failed = ask(self.parts.policy, messages)
        if failed:
            self.end_reason = "policy_error"
        dt_model = self.parts.clock() - t0
        self.totals.model_s += dt_model
        self.tracker.requests += 1
        self.totals.prompt_tokens += int(reply.prompt_tokens or 0)
        self.totals.completion_tokens += int(reply.completion_tokens or 0)
        self.obs.on_reply(t, reply)
        return reply, dt_model

    def _execute(self, t: int, parsed: ParsedReply) -> tuple[CellsOutcome, Turn]:
        """Run the reply's cells in the session; the turn it adds to the history."""
        ids = list(parsed.tool_call_ids)
        cells = [
            (ids[i] if i < len(ids) else f"call_{t}_{i}", code)
            for i, code in enumerate(parsed.code_cells)
        ]
        notices = [f"Malformed tool call: {e}" for e in parsed.errors]
        self.totals.malformed += bool(parsed.errors)
        done = run_cells(t, cells, self.sess, self.calls, self.parts.options.end_on_finish)
        self.totals.malformed += done.malformed
        if self.calls.exhausted:
            notices.append(f"The {self.calls.exhausted} budget is spent; the episode ends.")
        if not cells and not parsed.errors:
            self.end_reason = self.end_reason or "no_tool_call"
        turn = Turn(
            t, parsed.reasoning, tuple(done.tool_calls), tuple(done.outputs), "\n".join(notices)
        )
        self.history = self.history.with_turn(turn)
        return done, turn

    def _tally(self, t: int, done: CellsOutcome, solved_before: bool) -> None:
        """The request's cost inputs and, with a privileged source, its hidden request record."""
        tally = self.calls.tally
        self.totals.counts.append(
            RequestCounts(tally.physical_actions, tally.failed_physical, solved_before)
        )
        if self.recorder is not None:
            self.recorder.record_request(
                RequestRecord(
                    t,
                    tally.physical_actions,
                    tally.failed_physical,
                    done.python_error_only and tally.successful_calls == 0,
                    tally.physical_actions == 0
                    and tally.failed_physical == 0
                    and tally.perception_calls > 0,
                    tuple(tally.capabilities),
                )
            )

    # -- settle and close ----------------------------------------------------------------------

    def settle(self) -> EpisodeRecord:
        """Judge the final state and build the one record of the episode
        (:func:`~captain_ros.harness.episode.settle.settle`)."""
        return settle_episode(
            self.parts, self.opened, self.totals, self.end_reason, self.settle_budget
        )

    def close(self, record: EpisodeRecord) -> EpisodeRecord:
        """Write the end line, let observers amend the record, write ``summary.json``."""
        self.obs.on_trajectory({"type": "episode_end", "summary": record.to_dict()})
        record = self.obs.amend(record)
        self.writer.write({"type": "episode_end", "summary": record.to_dict()})
        self.writer.close()
        record.write(EpisodeFiles(self.parts.out_dir).summary)
        self.obs.on_end(record)
        return record


def run_episode(
    task: Any,
    seed: int,
    robot: RobotCaller,
    policy: Policy,
    budgets: Budgets | None = None,
    out_dir: str | Path = "episode",
    *,
    options: EpisodeOptions | None = None,
    privileged: PrivilegedSource | None = None,
    host_success: Callable[[], bool] | None = None,
    observers: Sequence[EpisodeObserver] = (),
    session_config: SessionConfig | None = None,
    context_config: ContextConfig | None = None,
    clock: Callable[[], float] = time.monotonic,
    session: PythonSession | None = None,
    resume: EpisodeResume | None = None,
) -> EpisodeRecord:
    """Run one episode (``Episode(EpisodeParts(...)).run()``); the arguments are
    :class:`EpisodeParts`'s."""
    parts = EpisodeParts(
        task,
        seed,
        robot,
        policy,
        Path(out_dir),
        budgets or Budgets(),
        options or EpisodeOptions(),
        privileged,
        host_success,
        tuple(observers),
        session_config,
        context_config,
        clock,
        session,
        resume,
    )
    return Episode(parts).run()
