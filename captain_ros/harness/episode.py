"""The episode loop: request -> policy -> python tool calls -> executed in order -> next observation.

An episode ends on a reply without a tool call, when ``finish()`` is accepted (``end_on_finish``),
when a budget (requests, wall time, physical actions) is spent, when an observer stops it at a
request boundary (a cancel, the critic's early stop), or, with privileged state, when every goal
has held for ``missed_finish_after`` consecutive requests without ``finish()`` (settled as a
missed finish, CaPtain section 3.3). Outcome labels follow the paper (``success_with_finish``,
``missed_finish``, ``false_finish``, ``budget_exhausted``, ``other_failure``). Malformed model
output (unparseable tool calls, unknown tools, empty code, syntax errors) becomes an observation
and counts as a request.

Front ends assemble an episode with :class:`~captain_ros.harness.setup.EpisodeSetup`, which calls
:func:`run_episode`; the loop writes ``trajectory.jsonl``, ``TASK.md``, images, ``summary.json``
(the :class:`~captain_ros.harness.record.episode_record.EpisodeRecord`) and, with a privileged source,
``privileged.jsonl``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from captain_ros.api.service import RobotCaller
from captain_ros.core.episode_folder import TASK_MD, EpisodeFiles
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.harness.budgets import Budgets, BudgetTracker
from captain_ros.harness.calls import EpisodeCalls, save_png
from captain_ros.harness.cells import run_cells
from captain_ros.harness.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
from captain_ros.harness.gate import CompletionGate
from captain_ros.harness.observers import EpisodeObserver, EpisodeStart, Observers
from captain_ros.harness.profiles import get_profile, library_prelude, library_task_md
from captain_ros.harness.record.episode_record import OUTCOMES, EpisodeRecord, outcome_label
from captain_ros.harness.record.history import History, ImageRef, Turn
from captain_ros.harness.record.privileged_log import (
    PRIVILEGED_FILE,
    PrivilegedRecorder,
    PrivilegedSource,
    RequestRecord,
)
from captain_ros.harness.record.returns import (
    CostConfig,
    RequestCounts,
    request_costs,
    terminal_return,
)
from captain_ros.harness.record.trajectory import TrajectoryWriter, messages_sha256
from captain_ros.harness.resume import EpisodeResume, apply_counters
from captain_ros.harness.sandbox.session import PythonSession, SessionConfig
from captain_ros.harness.taskmd import render_task_md
from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.policy.toolcalls import ParsedReply, parse_reply

log = logging.getLogger(__name__)

__all__ = ["OUTCOMES", "EpisodeOptions", "EpisodeRecord", "EpisodeResume", "outcome_label",
           "run_episode"]


@dataclass(frozen=True)
class EpisodeOptions:
    """How the loop runs beyond budgets.

    Attributes:
        policy_name / backend_name: What the record names as policy and backend.
        missed_finish_after: With privileged state, stop once every goal has held for this many
            consecutive requests without ``finish()`` (0: never).
        costs: Constants of the per-request costs.
        end_on_finish: End the episode when ``finish()`` is accepted.
        profile: The prompt profile (:mod:`captain_ros.harness.profiles`): system prompt, TASK.md
            API section and history limits; collection, training and deployment use the same one.
        system_prompt: Overrides the profile's system message when not empty.
    """

    policy_name: str = ""
    backend_name: str = ""
    missed_finish_after: int = 15
    costs: CostConfig = field(default_factory=CostConfig)
    end_on_finish: bool = True
    profile: str = "default"
    system_prompt: str = ""


def _observe_initial(robot: RobotCaller, out_dir: Path) -> tuple[ImageRef, ...]:
    try:
        res = robot.call("observe", {})
        if not res.success or not isinstance(res.value, dict):
            log.warning("initial observe failed: %s", res.message)
            return ()
        handle = str(res.value.get("handle", ""))
        refs = []
        for cam in res.value.get("cameras") or []:
            img = robot.image(handle, str(cam))
            if img is not None:
                rel = f"images/r000_initial_{cam}.png"
                save_png(img, out_dir / rel)
                refs.append(ImageRef(rel, str(cam), handle))
        return tuple(refs)
    except Exception:  # noqa: BLE001 - a broken caller must not stop the episode
        log.exception("initial observation failed")
        return ()


def _ask(policy: Policy, messages: list[dict[str, Any]]) -> tuple[PolicyReply, bool]:
    """The policy's reply and whether the policy failed (a failing model ends the episode)."""
    try:
        reply = policy.act(messages, [PYTHON_TOOL_SCHEMA])
    except Exception as exc:  # noqa: BLE001
        log.exception("policy failed")
        return PolicyReply(content="", reasoning=f"(policy error: {type(exc).__name__}: {exc})"), True
    if not isinstance(reply, PolicyReply):
        log.error("policy returned %s instead of a PolicyReply", type(reply).__name__)
        return PolicyReply(content="", reasoning=f"(policy returned {type(reply).__name__})"), True
    return reply, False


def _parse(reply: PolicyReply) -> ParsedReply:
    try:
        return parse_reply(reply.content, list(reply.tool_calls) or None, reply.reasoning)
    except Exception as exc:  # noqa: BLE001 - unparseable output is an observation
        log.exception("reply parsing failed")
        return ParsedReply(str(reply.reasoning or ""), (), (f"the reply could not be parsed ({exc})",))


def run_episode(task: Any, seed: int, robot: RobotCaller, policy: Policy, budgets: Budgets | None = None,
                out_dir: str | Path = "episode", *, options: EpisodeOptions | None = None,
                privileged: PrivilegedSource | None = None,
                host_success: Callable[[], bool] | None = None,
                observers: Sequence[EpisodeObserver] = (),
                session_config: SessionConfig | None = None, context_config: ContextConfig | None = None,
                clock: Callable[[], float] = time.monotonic,
                session: PythonSession | None = None,
                resume: EpisodeResume | None = None) -> EpisodeRecord:
    """Run one episode; write its folder; return its record.

    Args:
        task: A task per docs/contracts.md (``name``, ``instruction(seed)``, ``tolerances``,
            ``gate_check``, ``success``; with ``privileged`` also ``goals``, ``milestones``,
            ``features``, ``tracker``).
        seed: Scene seed (the scene must already be set up on the robot side).
        robot: Executes robot calls (``RobotService`` in-process, or a ROS client).
        policy: Produces one reply per request.
        budgets: Requests / wall time / physical actions (paper defaults).
        out_dir: Episode folder; ``out_dir/workspace`` is the policy's file area.
        options: Names, missed-finish stop, costs (:class:`EpisodeOptions`).
        privileged: Ground truth (simulation): recorded before every request, judges success.
        host_success: The task predicate on the final state when there is no ``privileged``
            source (e.g. a service); without either, host success is unknown (False).
        observers: See :mod:`captain_ros.harness.observers`.
        session: An existing session to reuse (else one is started and closed here).
        resume: Start at a restored decision point (:class:`EpisodeResume`) instead of request 1.
    """
    budgets = budgets or Budgets()
    opts = options or EpisodeOptions()
    recorded = resume.start_line if resume is not None else {}
    profile = get_profile(str(recorded.get("profile") or opts.profile))  # a continuation renders
    system_prompt = opts.system_prompt or profile.system_prompt  # as its record did
    ctx = context_config or (ContextConfig(**recorded["context"]) if recorded.get("context")
                             else profile.context)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    obs = Observers(observers)
    task_name = str(getattr(task, "name", "task"))
    tracker = BudgetTracker(budgets, clock)
    t_start = clock()
    gate = resume.gate if resume is not None else CompletionGate(task.gate_check)
    calls = EpisodeCalls(robot, tracker, gate, out, observer=obs.on_call)
    if resume is not None:
        session = resume.session
        apply_counters(resume, tracker, calls)
    prelude = library_prelude(profile)
    if resume is None and prelude:
        session_config = replace(session_config or SessionConfig(), prelude=prelude)
    if session is not None and resume is None and session.config.prelude != prelude:
        raise InvalidArgumentError(f"the session given does not start with the {profile.name!r} "
                                   "profile's helper library")
    own_session = session is None or resume is not None
    sess = session or PythonSession(out / "workspace", session_config, log_path=out / "session.log")
    task_md = str(recorded.get("task_md") or "") or render_task_md(
        task, seed, budgets, profile.compact_api, library_task_md(profile), profile.reference)
    EpisodeFiles(out).task_md.write_text(task_md)
    (sess.workspace / TASK_MD).write_text(task_md)  # the session's copy: the policy reads it
    writer = TrajectoryWriter(EpisodeFiles(out).trajectory)
    recorder = (PrivilegedRecorder(out / PRIVILEGED_FILE, task, privileged, log.warning, obs.on_privileged)
                if privileged is not None else None)
    session_info: dict[str, Any] = {"hash_seed": sess.config.hash_seed, "rng_seed": sess.config.rng_seed}
    if sess.config.prelude:  # the record holds what ran (a replay must run the same)
        session_info["prelude"] = sess.config.prelude
    if resume is None:
        policy.reset(task_name, seed)
        history = History(system_prompt, task_md, _observe_initial(robot, out))
        start_line = {"type": "episode_start", "task": task_name, "seed": seed,
                      "policy": opts.policy_name, "backend": opts.backend_name,
                      "profile": profile.name, "system": system_prompt, "task_md": task_md,
                      "initial_images": [r.to_dict() for r in history.initial_images],
                      "budgets": budgets.to_dict(), "context": ctx.to_dict(), "tools": [PYTHON_TOOL_SCHEMA],
                      "session": session_info}
        prefix_lines: tuple[dict[str, Any], ...] = ()
    else:
        history = resume.history
        start_line = {**resume.start_line, "policy": opts.policy_name, "session": session_info,
                      "resumed_from": dict(resume.resumed_from)}
        prefix_lines = tuple(resume.prefix_lines)
        if recorder is not None and resume.privileged_states is not None:
            recorder.resume_from(resume.privileged_states, resume.privileged_requests, resume.task_tracker)
    try:  # start-up (pre-imports) is paid once, not inside request 1; the record says its layers
        sess.start()  # (a strict session that lacks one raises SandboxUnavailableError here)
    except RuntimeError:
        log.exception("session start failed; the first cell will retry")
    session_info["layers"] = dict(sess.layers)
    try:
        writer.write(start_line)
        for line in prefix_lines:
            writer.write(line)
        obs.on_start(EpisodeStart(task_name, int(seed), opts.policy_name, opts.backend_name, str(out),
                                  budgets.to_dict()))
        obs.on_trajectory(start_line)
        for line in prefix_lines:
            obs.on_trajectory(line)
    except BaseException:  # the loop's own cleanup below is not reached: close the child here
        if own_session:
            sess.close()
        raise
    model_s = resume.model_s if resume is not None else 0.0
    prompt_tokens = resume.prompt_tokens if resume is not None else 0
    completion_tokens = resume.completion_tokens if resume is not None else 0
    malformed = resume.malformed if resume is not None else 0
    end_reason, settle_budget = "", None
    counts: list[RequestCounts] = list(resume.counts) if resume is not None else []
    try:
        while True:
            spent = tracker.exhausted()  # requests or wall time; physical: only once a call is refused
            spent = (spent if spent != "physical_actions" else None) or calls.exhausted
            if spent:
                end_reason = f"budget:{spent}"
                break
            t = tracker.requests + 1
            state = recorder.observe(t) if recorder is not None else None
            if (state is not None and opts.missed_finish_after > 0
                    and recorder is not None and recorder.solved_streak(state) > opts.missed_finish_after):
                end_reason = "missed_finish_stop"  # all goals held for N requests without finish()
                break
            if state is not None:
                obs.on_state(t, state)
            stop = obs.before_request(t)
            if stop is not None:
                end_reason = f"stop:{stop.reason}"
                settle_budget = stop.reason if stop.settle_as_budget else None
                break
            solved_before = recorder is not None and state is not None and (
                state.solved or any(s.solved for s in recorder.states))
            if recorder is not None:
                recorder.commit()
            t_request = clock()
            messages = render(history, ctx)  # counted by ctx.tokenizer, as recorded
            t0 = clock()
            reply, failed = _ask(policy, messages)
            if failed:
                end_reason = "policy_error"
            dt_model = clock() - t0
            model_s += dt_model
            tracker.requests += 1
            prompt_tokens += int(reply.prompt_tokens or 0)
            completion_tokens += int(reply.completion_tokens or 0)
            obs.on_reply(t, reply)
            backend_before = calls.backend_s
            parsed = _parse(reply)
            ids = list(parsed.tool_call_ids)
            cells = [(ids[i] if i < len(ids) else f"call_{t}_{i}", code) for i, code in enumerate(parsed.code_cells)]
            notices = [f"Malformed tool call: {e}" for e in parsed.errors]
            malformed += bool(parsed.errors)
            gate_before = len(gate.decisions)
            done = run_cells(t, cells, sess, calls, opts.end_on_finish)
            malformed += done.malformed
            if calls.exhausted:
                notices.append(f"The {calls.exhausted} budget is spent; the episode ends.")
            if not cells and not parsed.errors:
                end_reason = end_reason or "no_tool_call"
            turn = Turn(t, parsed.reasoning, tuple(done.tool_calls), tuple(done.outputs), "\n".join(notices))
            history = history.with_turn(turn)
            backend_dt = calls.backend_s - backend_before
            tally = calls.tally
            counts.append(RequestCounts(tally.physical_actions, tally.failed_physical, solved_before))
            if recorder is not None:
                recorder.record_request(RequestRecord(
                    t, tally.physical_actions, tally.failed_physical,
                    done.python_error_only and tally.successful_calls == 0,
                    tally.physical_actions == 0 and tally.failed_physical == 0 and tally.perception_calls > 0,
                    tuple(tally.capabilities)))
            entry = {"type": "request", "t": t, "reasoning": parsed.reasoning, "content": reply.content,
                     "tool_calls_raw": list(reply.tool_calls), "calls": done.logged,
                     "malformed": list(parsed.errors), "notice": turn.notice, "budget": tracker.snapshot(),
                     "gate": [d.to_dict() for d in gate.decisions[gate_before:]],
                     "model_s": dt_model, "backend_s": backend_dt,
                     "harness_s": max(0.0, clock() - t_request - dt_model - backend_dt),
                     "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                     "policy_info": dict(reply.info),  # e.g. the faults a scripted-faulty expert injected
                     "context_sha256": messages_sha256(messages)}
            writer.write(entry)
            obs.on_trajectory(entry)
            obs.on_request(t, entry)
            if end_reason:
                break
            if calls.finish_accepted and opts.end_on_finish:
                end_reason = "finish"
                break
    finally:
        if own_session:
            sess.close()
    wall_s = clock() - t_start + (resume.wall_used_s if resume is not None else 0.0)
    record = _settle(task, seed, robot, recorder, host_success, opts, end_reason, settle_budget,
                     gate, tracker, calls, counts, wall_s, model_s, prompt_tokens,
                     completion_tokens, sess, malformed, out)
    obs.on_trajectory({"type": "episode_end", "summary": record.to_dict()})
    record = obs.amend(record)
    writer.write({"type": "episode_end", "summary": record.to_dict()})
    writer.close()
    record.write(EpisodeFiles(out).summary)
    obs.on_end(record)
    return record


def _settle(task: Any, seed: int, robot: RobotCaller, recorder: PrivilegedRecorder | None,
            host_success: Callable[[], bool] | None, opts: EpisodeOptions, end_reason: str,
            settle_budget: str | None, gate: CompletionGate, tracker: BudgetTracker,
            calls: EpisodeCalls, counts: list[RequestCounts], wall_s: float, model_s: float,
            prompt_tokens: int, completion_tokens: int, sess: PythonSession, malformed: int,
            out: Path) -> EpisodeRecord:
    """Judge the final state and build the one record of the episode."""
    task_name = str(getattr(task, "name", "task"))
    final = recorder.final_state(tracker.requests + 1) if recorder is not None else None
    backend = getattr(robot, "backend", None)
    if host_success is None and backend is not None and hasattr(task, "success"):
        def host_success() -> bool:  # an in-process robot without a recorder: judge directly
            return bool(task.success(backend.privileged_state()))
    milestones: float | None = None
    if final is not None:
        host_ok = final.solved
        milestones = sum(final.milestones) / max(1, len(final.milestones))
    else:
        try:
            host_ok = bool(host_success()) if host_success else False
        except Exception:  # noqa: BLE001
            log.exception("host success predicate failed")
            host_ok = False
    exhausted = end_reason[len("budget:"):] if end_reason.startswith("budget:") else settle_budget
    outcome = outcome_label(host_ok, gate.accepted, exhausted)
    costs: list[float] = []
    ret: float | None = None
    if final is not None and recorder is not None:
        costs = request_costs(task_name, counts, opts.costs)
        ret = terminal_return(outcome, task_name, recorder.final_rung(), len(task.milestone_names))
    record = EpisodeRecord(
        task=task_name, seed=int(seed), policy=opts.policy_name, backend=opts.backend_name,
        outcome=outcome, host_success=host_ok, strict_success=host_ok and gate.accepted,
        finished=gate.accepted, gate_rejections=gate.rejections, end_reason=end_reason,
        budget_exhausted=exhausted, requests=tracker.requests, physical_actions=tracker.physical_actions,
        failed_actions=calls.failed_physical, robot_calls=calls.calls, wall_s=wall_s, model_s=model_s,
        backend_s=calls.backend_s, harness_s=max(0.0, wall_s - model_s - calls.backend_s),
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
        session_restarts=sess.restarts, sandbox_violations=len(sess.violations),
        malformed_replies=malformed, milestones=milestones, return_R=ret,
        cost_total=float(sum(costs)) if final is not None else None,
        privileged=final is not None, out_dir=str(out),
        extra={"host_success_available": final is not None or host_success is not None})
    if recorder is not None:
        recorder.finish(record, costs)
    return record
