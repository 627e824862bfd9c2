"""The episode loop: request -> policy -> python tool calls -> executed in order -> next observation.

An episode ends on a reply without a tool call, when ``finish()`` is accepted (``end_on_finish``),
or when a budget (requests, wall time, physical actions) is spent. Outcome labels follow the paper:
``success_with_finish``, ``missed_finish`` (host success without finish), ``false_finish`` (finish on
a failed state), ``budget_exhausted`` and ``other_failure``. Host success comes from a swappable
callable (in-process: ``task.success(backend.privileged_state())``; under ROS: a service); strict
success also requires an accepted ``finish()``. Malformed model output (unparseable tool calls,
unknown tools, empty code, syntax errors) becomes an observation and counts as a request.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.api.service import RobotCaller
from captain_ros.harness.budgets import Budgets, BudgetTracker
from captain_ros.harness.calls import CallObserver, EpisodeCalls, save_png
from captain_ros.harness.context import PYTHON_TOOL_SCHEMA, ContextConfig, approx_tokens, render
from captain_ros.harness.gate import CompletionGate
from captain_ros.harness.history import History, ImageRef, ToolCall, ToolOutput, Turn
from captain_ros.harness.session import PythonSession, SessionConfig
from captain_ros.harness.taskmd import SYSTEM_PROMPT, render_task_md
from captain_ros.harness.trajectory import TrajectoryWriter, messages_sha256
from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.policy.toolcalls import ParsedReply, parse_reply

log = logging.getLogger(__name__)

OUTCOMES = ("success_with_finish", "missed_finish", "false_finish", "budget_exhausted", "other_failure")
MAX_CODE_CHARS = 100_000


def outcome_label(host_success: bool, finish_called: bool, budget_exhausted: str | None) -> str:
    """The paper's terminal labels (success > missed finish > ... > false finish)."""
    if host_success:
        return "success_with_finish" if finish_called else "missed_finish"
    if finish_called:
        return "false_finish"
    return "budget_exhausted" if budget_exhausted else "other_failure"


@dataclass(frozen=True)
class EpisodeSummary:
    """The result of one episode. Times in seconds."""

    task: str
    seed: int
    outcome: str
    host_success: bool
    strict_success: bool
    finish_called: bool
    gate_rejections: int
    end_reason: str
    budget_exhausted: str | None
    requests: int
    physical_actions: int
    robot_calls: int
    wall_s: float
    model_s: float
    backend_s: float
    harness_s: float
    prompt_tokens: int
    completion_tokens: int
    session_restarts: int
    sandbox_violations: int
    malformed_replies: int
    out_dir: str
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _host_success_fn(task: Any, robot: Any) -> Callable[[], bool] | None:
    backend = getattr(robot, "backend", None)
    if backend is None or not hasattr(task, "success"):
        return None
    return lambda: bool(task.success(backend.privileged_state()))


def _initial_images(robot: RobotCaller, out_dir: Path) -> tuple[ImageRef, ...]:
    try:
        return _observe_initial(robot, out_dir)
    except Exception:  # noqa: BLE001 - a broken caller must not stop the episode
        log.exception("initial observation failed")
        return ()


def _observe_initial(robot: RobotCaller, out_dir: Path) -> tuple[ImageRef, ...]:
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


def run_episode(task: Any, seed: int, robot: RobotCaller, policy: Policy, budgets: Budgets | None = None,
                out_dir: str | Path = "episode", *, host_success: Callable[[], bool] | None = None,
                session_config: SessionConfig | None = None, context_config: ContextConfig | None = None,
                count_tokens: Callable[[str], int] = approx_tokens, system_prompt: str = SYSTEM_PROMPT,
                end_on_finish: bool = True, clock: Callable[[], float] = time.monotonic,
                session: PythonSession | None = None,
                on_call: CallObserver | None = None) -> EpisodeSummary:
    """Run one episode and write ``trajectory.jsonl``, ``TASK.md`` and images into ``out_dir``.

    Args:
        task: A task per docs/contracts.md (``name``, ``instruction(seed)``, ``tolerances``,
            ``gate_check(measurements)``, ``success(state)``).
        seed: Scene seed (the scene must already be set up on the robot side).
        robot: Executes robot calls (``RobotService`` in-process, or a ROS client).
        policy: Produces one reply per request.
        budgets: Requests / wall time / physical actions (paper defaults).
        out_dir: Episode folder; ``out_dir/workspace`` is the policy's file area.
        host_success: Returns the task predicate on the final state; default uses
            ``task.success(robot.backend.privileged_state())`` when the robot has a backend.
        session: An existing session to reuse (else one is started and closed here).
        on_call: Observer of every robot call's final Result, budget included, ``finish``
            included (``on_call(name, kwargs, result, duration_s)``); e.g. the policy node
            publishes each receipt live.
    """
    budgets = budgets or Budgets()
    ctx = context_config or ContextConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tracker = BudgetTracker(budgets, clock)
    t_start = clock()
    gate = CompletionGate(task.gate_check)
    calls = EpisodeCalls(robot, tracker, gate, out, observer=on_call)
    own_session = session is None
    sess = session or PythonSession(out / "workspace", session_config, log_path=out / "session.log")
    task_md = render_task_md(task, seed, budgets)
    (out / "TASK.md").write_text(task_md)
    (sess.workspace / "TASK.md").write_text(task_md)
    writer = TrajectoryWriter(out / "trajectory.jsonl")
    policy.reset(str(getattr(task, "name", "task")), seed)
    history = History(system_prompt, task_md, _initial_images(robot, out))
    writer.write({"type": "episode_start", "task": getattr(task, "name", "task"), "seed": seed,
                  "system": system_prompt, "task_md": task_md,
                  "initial_images": [r.to_dict() for r in history.initial_images],
                  "budgets": budgets.to_dict(), "context": ctx.to_dict(), "tools": [PYTHON_TOOL_SCHEMA]})
    model_s = 0.0
    prompt_tokens = completion_tokens = malformed = 0
    end_reason = ""
    try:
        try:
            sess.start()  # start-up (pre-imports) is paid once, not inside request 1
        except RuntimeError:
            log.exception("session start failed; the first cell will retry")
        while True:
            spent = tracker.exhausted()  # requests or wall time; physical: only once a call is refused
            spent = (spent if spent != "physical_actions" else None) or calls.exhausted
            if spent:
                end_reason = f"budget:{spent}"
                break
            t = tracker.requests + 1
            t_request = clock()
            messages = render(history, ctx, count_tokens)
            t0 = clock()
            try:
                reply = policy.act(messages, [PYTHON_TOOL_SCHEMA])
            except Exception as exc:  # noqa: BLE001 - a failing model ends the episode, not the harness
                log.exception("policy failed")
                reply = PolicyReply(content="", reasoning=f"(policy error: {type(exc).__name__}: {exc})")
                end_reason = "policy_error"
            if not isinstance(reply, PolicyReply):
                log.error("policy returned %s instead of a PolicyReply", type(reply).__name__)
                reply = PolicyReply(content="", reasoning=f"(policy returned {type(reply).__name__})")
                end_reason = "policy_error"
            dt_model = clock() - t0
            model_s += dt_model
            tracker.requests += 1
            prompt_tokens += int(reply.prompt_tokens or 0)
            completion_tokens += int(reply.completion_tokens or 0)
            backend_before = calls.backend_s
            try:
                parsed = parse_reply(reply.content, list(reply.tool_calls) or None, reply.reasoning)
            except Exception as exc:  # noqa: BLE001 - unparseable output is an observation
                log.exception("reply parsing failed")
                parsed = ParsedReply(str(reply.reasoning or ""), (), (f"the reply could not be parsed ({exc})",))
            ids = list(parsed.tool_call_ids)
            cells = [(ids[i] if i < len(ids) else f"call_{t}_{i}", code) for i, code in enumerate(parsed.code_cells)]
            notices = [f"Malformed tool call: {e}" for e in parsed.errors]
            if parsed.errors:
                malformed += 1
            gate_before = len(gate.decisions)
            tool_calls: list[ToolCall] = []
            outputs: list[ToolOutput] = []
            logged: list[dict[str, Any]] = []
            for k, (call_id, code) in enumerate(cells):
                tool_calls.append(ToolCall(call_id, code))
                if calls.exhausted or (calls.finish_accepted and end_on_finish):
                    why = "finish() was accepted" if calls.finish_accepted else f"the {calls.exhausted} budget is spent"
                    text = f"[not executed: {why}]"
                    outputs.append(ToolOutput(call_id, text))
                    logged.append({"call_id": call_id, "code": code, "output": text, "skipped": True})
                    continue
                calls.begin_cell(t, k)
                error = _precheck(code)
                if error:
                    malformed += 1
                    text, cres = error, None
                else:
                    cres = sess.run_cell(code, calls)
                    text = cres.text()
                receipts = calls.receipts_block()
                if calls.log.image_messages:
                    text = (text + "\n" if text else "") + "\n".join(f"[image] {m}" for m in calls.log.image_messages)
                full = "\n".join(p for p in (text, receipts) if p) or "(no output)"
                outputs.append(ToolOutput(call_id, full, tuple(calls.log.images)))
                logged.append({"call_id": call_id, "code": code, "output": full, "receipts": list(calls.log.receipts),
                               "receipts_total": len(calls.log.receipts),
                               "images": [r.to_dict() for r in calls.log.images],
                               "robot_calls": calls.log.robot_calls,
                               "error": error or (cres.error if cres else None),
                               "timed_out": bool(cres and cres.timed_out), "crashed": bool(cres and cres.crashed),
                               "violations": list(cres.violations) if cres else [],
                               "duration_s": cres.duration_s if cres else 0.0, "call_s": cres.call_s if cres else 0.0})
            if calls.exhausted:
                notices.append(f"The {calls.exhausted} budget is spent; the episode ends.")
            if not cells and not parsed.errors:
                end_reason = end_reason or "no_tool_call"
            turn = Turn(t, parsed.reasoning, tuple(tool_calls), tuple(outputs), "\n".join(notices))
            history = history.with_turn(turn)
            backend_dt = calls.backend_s - backend_before
            writer.write({"type": "request", "t": t, "reasoning": parsed.reasoning, "content": reply.content,
                          "tool_calls_raw": list(reply.tool_calls), "calls": logged, "malformed": list(parsed.errors),
                          "notice": turn.notice, "budget": tracker.snapshot(),
                          "gate": [d.to_dict() for d in gate.decisions[gate_before:]],
                          "model_s": dt_model, "backend_s": backend_dt,
                          "harness_s": max(0.0, clock() - t_request - dt_model - backend_dt),
                          "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                          "context_sha256": messages_sha256(messages)})
            if end_reason:
                break
            if calls.finish_accepted and end_on_finish:
                end_reason = "finish"
                break
    finally:
        if own_session:
            sess.close()
    wall_s = clock() - t_start
    hs_fn = host_success or _host_success_fn(task, robot)
    try:
        host_ok = bool(hs_fn()) if hs_fn else False
    except Exception:  # noqa: BLE001
        log.exception("host success predicate failed")
        host_ok = False
    exhausted = end_reason[len("budget:"):] if end_reason.startswith("budget:") else None
    summary = EpisodeSummary(
        str(getattr(task, "name", "task")), int(seed), outcome_label(host_ok, gate.accepted, exhausted), host_ok,
        host_ok and gate.accepted, gate.accepted, gate.rejections, end_reason, exhausted, tracker.requests,
        tracker.physical_actions, calls.calls, wall_s, model_s, calls.backend_s,
        max(0.0, wall_s - model_s - calls.backend_s), prompt_tokens, completion_tokens, sess.restarts,
        len(sess.violations), malformed, str(out), {"host_success_available": hs_fn is not None})
    writer.write({"type": "episode_end", "summary": summary.to_dict()})
    (out / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2))
    writer.close()
    return summary


def _precheck(code: str) -> str | None:
    """Reject code that cannot run (too long, syntax error) before it reaches the session."""
    if len(code) > MAX_CODE_CHARS:
        return f"Code rejected: {len(code)} characters is more than the {MAX_CODE_CHARS} allowed per call."
    try:
        compile(code, "<cell>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return (f"SyntaxError: {exc.msg} (line {exc.lineno}, column {exc.offset}). "
                f"The cell was not run; fix the code and call python again.")
    except (ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return f"Code rejected: {type(exc).__name__}: {exc}"
    return None
