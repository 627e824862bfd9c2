"""Settling an episode: judge the final state (host success), label the outcome (CaPtain's labels:
``success_with_finish``, ``missed_finish``, ``false_finish``, ``budget_exhausted``,
``other_failure``), price the requests and build the one
:class:`~captain_ros.harness.record.episode_record.EpisodeRecord`.

:func:`settle` is the last step of :class:`~captain_ros.harness.episode.loop.Episode` before it
closes the record; it calls nothing back in the loop.
"""

from __future__ import annotations

import logging

from captain_ros.harness.episode.parts import EpisodeParts, Totals
from captain_ros.harness.episode.start import Opened
from captain_ros.harness.record.episode_record import EpisodeRecord, outcome_label
from captain_ros.harness.record.privileged_log import StateRecord
from captain_ros.harness.record.returns import request_costs, terminal_return

log = logging.getLogger(__name__)

__all__ = ["host_success", "settle"]


def settle(
    parts: EpisodeParts,
    opened: Opened,
    totals: Totals,
    end_reason: str,
    settle_budget: str | None,
) -> EpisodeRecord:
    """Judge the final state and build the episode's record (``end_reason``: why the loop ended;
    ``settle_budget``: an observer's stop settled as that budget spent)."""
    p, o = parts, opened
    task_name = str(getattr(p.task, "name", "task"))
    resumed_s = p.resume.wall_used_s if p.resume is not None else 0.0
    wall_s = p.clock() - o.t_start + resumed_s
    final = o.recorder.final_state(o.tracker.requests + 1) if o.recorder is not None else None
    host_ok, judged = host_success(p, final)
    milestones = (
        sum(final.milestones) / max(1, len(final.milestones)) if final is not None else None
    )
    reason = end_reason
    exhausted = reason[len("budget:") :] if reason.startswith("budget:") else settle_budget
    outcome = outcome_label(host_ok, o.gate.accepted, exhausted)
    costs: list[float] = []
    ret: float | None = None
    if final is not None and o.recorder is not None:
        costs = request_costs(task_name, totals.counts, p.options.costs)
        ret = terminal_return(
            outcome, task_name, o.recorder.final_rung(), len(p.task.milestone_names)
        )
    calls, sess = o.calls, o.sess
    last = o.gate.decisions[-1] if o.gate.decisions else None
    record = EpisodeRecord(
        task=task_name,
        seed=int(p.seed),
        policy=p.options.policy_name,
        backend=p.options.backend_name,
        outcome=outcome,
        host_success=host_ok,
        strict_success=host_ok and o.gate.accepted,
        finished=o.gate.accepted,
        gate_rejections=o.gate.rejections,
        gate_reason=last.reason if last is not None else "",
        finish_summary=last.summary if last is not None else "",
        end_reason=reason,
        budget_exhausted=exhausted,
        requests=o.tracker.requests,
        physical_actions=o.tracker.physical_actions,
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
    if o.recorder is not None:
        o.recorder.finish(record, costs)
    return record


def host_success(p: EpisodeParts, final: StateRecord | None) -> tuple[bool, bool]:
    """Host success and whether anything could judge it: the privileged record's final state,
    else the given predicate, else the task on an in-process backend's ground truth."""
    if final is not None:
        return final.solved, True
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
