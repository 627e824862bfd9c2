"""The episode loop: request -> policy -> python tool calls -> executed in order -> next observation.

An episode ends on a reply without a tool call, when ``finish()`` is accepted (``end_on_finish``),
when a budget (requests, wall time, physical actions) is spent, when an observer stops it at a
request boundary (a cancel, the critic's early stop), or, with privileged state, when every goal
has held for ``missed_finish_after`` consecutive requests without ``finish()`` (settled as a
missed finish, CaPtain section 3.3). Outcome labels follow the paper (``success_with_finish``,
``missed_finish``, ``false_finish``, ``budget_exhausted``, ``other_failure``). Malformed model
output (unparseable tool calls, unknown tools, empty code, syntax errors) becomes an observation
and counts as a request.

One run is an :class:`Episode` built from its :class:`EpisodeParts` (typed, frozen): ``open`` the
folder, session and logs, ``announce`` the start, make ``request`` after request, ``settle`` the
outcome and ``close`` the record; each step is one method. Front ends assemble an episode with
:class:`~captain_ros.harness.episode.setup.EpisodeSetup`; :func:`run_episode` is the one-call form.
The loop writes ``trajectory.jsonl``, ``TASK.md``, images, ``summary.json`` (the
:class:`~captain_ros.harness.record.episode_record.EpisodeRecord`) and, with a privileged source,
``privileged.jsonl``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from captain_ros.api.service import RobotCaller
from captain_ros.core.episode_folder import TASK_MD, EpisodeFiles
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.harness.episode.budgets import Budgets, BudgetTracker
from captain_ros.harness.episode.calls import EpisodeCalls, observe_initial
from captain_ros.harness.episode.cells import CellsOutcome, run_cells
from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
from captain_ros.harness.episode.gate import CompletionGate
from captain_ros.harness.episode.observers import EpisodeObserver, EpisodeStart, Observers
from captain_ros.harness.episode.parts import EpisodeOptions, EpisodeParts, Totals
from captain_ros.harness.episode.profiles import get_profile, library_prelude, library_task_md
from captain_ros.harness.episode.reply import ask, parse
from captain_ros.harness.episode.resume import EpisodeResume, apply_counters
from captain_ros.harness.episode.taskmd import render_task_md
from captain_ros.harness.record.episode_record import EpisodeRecord, outcome_label
from captain_ros.harness.record.history import History, Turn
from captain_ros.harness.record.privileged_log import (
    PrivilegedRecorder,
    PrivilegedSource,
    RequestRecord,
    StateRecord,
)
from captain_ros.harness.record.returns import RequestCounts, request_costs, terminal_return
from captain_ros.harness.record.trajectory import TrajectoryWriter, messages_sha256
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
        """Make the folder, the budget tracker, the gate, the call handler, the session and the
        logs; write TASK.md; build the start line (fresh, or the recorded one when resuming)."""
        p = self.parts
        p.out_dir.mkdir(parents=True, exist_ok=True)
        self.tracker = BudgetTracker(p.budgets, p.clock)
        self.t_start = p.clock()
        self.gate = p.resume.gate if p.resume is not None else CompletionGate(p.task.gate_check)
        self.calls = EpisodeCalls(
            p.robot, self.tracker, self.gate, p.out_dir, observer=self.obs.on_call
        )
        if p.resume is not None:
            apply_counters(p.resume, self.tracker, self.calls)
        self.sess, self.own_session = self._session()
        self._files()
        self._start_line()

    def _session(self) -> tuple[PythonSession, bool]:
        p = self.parts
        if p.resume is not None:
            return p.resume.session, True
        prelude = library_prelude(self.profile)
        config = (
            replace(p.session_config or SessionConfig(), prelude=prelude)
            if prelude
            else p.session_config
        )
        if p.session is not None:
            if p.session.config.prelude != prelude:
                raise InvalidArgumentError(
                    f"the session given does not start with the {self.profile.name!r} "
                    "profile's helper library"
                )
            return p.session, False
        files = EpisodeFiles(p.out_dir)
        return PythonSession(files.workspace, config, log_path=files.session_log), True

    def _files(self) -> None:
        p = self.parts
        self.task_md = str(self.recorded.get("task_md") or "") or render_task_md(
            p.task,
            p.seed,
            p.budgets,
            self.profile.compact_api,
            library_task_md(self.profile),
            self.profile.reference,
        )
        files = EpisodeFiles(p.out_dir)
        files.task_md.write_text(self.task_md)
        (self.sess.workspace / TASK_MD).write_text(
            self.task_md
        )  # the session's copy: the policy reads it
        self.writer = TrajectoryWriter(files.trajectory)
        self.recorder = (
            PrivilegedRecorder(
                files.privileged, p.task, p.privileged, log.warning, self.obs.on_privileged
            )
            if p.privileged is not None
            else None
        )
        self.session_info: dict[str, Any] = {
            "hash_seed": self.sess.config.hash_seed,
            "rng_seed": self.sess.config.rng_seed,
        }
        if self.sess.config.prelude:  # the record holds what ran (a replay must run the same)
            self.session_info["prelude"] = self.sess.config.prelude

    def _start_line(self) -> None:
        p, r = self.parts, self.parts.resume
        if r is None:
            p.policy.reset(self.task_name, p.seed)
            self.history = History(
                self.system_prompt, self.task_md, observe_initial(p.robot, p.out_dir)
            )
            self.start_line = {
                "type": "episode_start",
                "task": self.task_name,
                "seed": p.seed,
                "policy": p.options.policy_name,
                "backend": p.options.backend_name,
                "profile": self.profile.name,
                "system": self.system_prompt,
                "task_md": self.task_md,
                "initial_images": [i.to_dict() for i in self.history.initial_images],
                "budgets": p.budgets.to_dict(),
                "context": self.ctx.to_dict(),
                "tools": [PYTHON_TOOL_SCHEMA],
                "session": self.session_info,
            }
            self.prefix_lines: tuple[dict[str, Any], ...] = ()
            return
        self.history = r.history
        self.start_line = {
            **r.start_line,
            "policy": p.options.policy_name,
            "session": self.session_info,
            "resumed_from": dict(r.resumed_from),
        }
        self.prefix_lines = tuple(r.prefix_lines)
        if self.recorder is not None and r.privileged_states is not None:
            self.recorder.resume_from(r.privileged_states, r.privileged_requests, r.task_tracker)

    # -- announce ------------------------------------------------------------------------------

    def announce(self) -> None:
        """Start the session (its start-up is paid once, not inside request 1; the record says its
        layers), write the start line (and a resumed episode's recorded requests), tell observers."""
        p = self.parts
        try:
            self.sess.start()  # (a strict session that lacks one raises SandboxUnavailableError here)
        except RuntimeError:
            log.exception("session start failed; the first cell will retry")
        self.session_info["layers"] = dict(self.sess.layers)
        try:
            self.writer.write(self.start_line)
            for line in self.prefix_lines:
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
            self.obs.on_trajectory(self.start_line)
            for line in self.prefix_lines:
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
        """Judge the final state and build the one record of the episode."""
        p, totals = self.parts, self.totals
        resumed_s = p.resume.wall_used_s if p.resume is not None else 0.0
        wall_s = p.clock() - self.t_start + resumed_s
        final = (
            self.recorder.final_state(self.tracker.requests + 1)
            if self.recorder is not None
            else None
        )
        host_ok, judged = self._host_success(final)
        milestones = (
            sum(final.milestones) / max(1, len(final.milestones)) if final is not None else None
        )
        reason = self.end_reason
        exhausted = reason[len("budget:") :] if reason.startswith("budget:") else self.settle_budget
        outcome = outcome_label(host_ok, self.gate.accepted, exhausted)
        costs: list[float] = []
        ret: float | None = None
        if final is not None and self.recorder is not None:
            costs = request_costs(self.task_name, totals.counts, p.options.costs)
            ret = terminal_return(
                outcome, self.task_name, self.recorder.final_rung(), len(p.task.milestone_names)
            )
        calls, sess = self.calls, self.sess
        record = EpisodeRecord(
            task=self.task_name,
            seed=int(p.seed),
            policy=p.options.policy_name,
            backend=p.options.backend_name,
            outcome=outcome,
            host_success=host_ok,
            strict_success=host_ok and self.gate.accepted,
            finished=self.gate.accepted,
            gate_rejections=self.gate.rejections,
            end_reason=reason,
            budget_exhausted=exhausted,
            requests=self.tracker.requests,
            physical_actions=self.tracker.physical_actions,
            failed_actions=calls.failed_physical,
            robot_calls=calls.calls,
            wall_s=wall_s,
            model_s=totals.model_s,
            backend_s=calls.backend_s,
            harness_s=max(0.0, wall_s - totals.model_s - calls.backend_s),
            prompt_tokens=totals.prompt_tokens,
            completion_tokens=totals.completion_tokens,
            session_restarts=sess.restarts,
            sandbox_violations=len(sess.violations),
            malformed_replies=totals.malformed,
            milestones=milestones,
            return_R=ret,
            cost_total=float(sum(costs)) if final is not None else None,
            privileged=final is not None,
            out_dir=str(p.out_dir),
            extra={"host_success_available": final is not None or judged},
        )
        if self.recorder is not None:
            self.recorder.finish(record, costs)
        return record

    def _host_success(self, final: StateRecord | None) -> tuple[bool, bool]:
        """Host success and whether anything could judge it: the privileged record's final state,
        else the given predicate, else the task on an in-process backend's ground truth."""
        if final is not None:
            return final.solved, True
        p = self.parts
        backend = getattr(p.robot, "backend", None)
        judge = p.host_success
        if judge is None and backend is not None and hasattr(p.task, "success"):

            def judge() -> bool:  # an in-process robot without a recorder: judge directly
                return bool(p.task.success(backend.privileged_state()))

        try:
            return (bool(judge()) if judge else False), judge is not None
        except Exception:  # noqa: BLE001
            log.exception("host success predicate failed")
            return False, True

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
