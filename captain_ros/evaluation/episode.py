"""One in-process episode: task scene -> backend -> robot services -> harness loop -> episode folder.

This is what ``captain run`` and every ``captain eval`` worker execute. It builds the backend for
``(task, seed)``, the motion and perception services and the :class:`~captain_ros.api.RobotService`,
runs :func:`captain_ros.harness.episode.run_episode` with the chosen policy, and writes the episode
folder: ``summary.json``, ``trajectory.jsonl`` (from the harness), ``TASK.md``, images, the
recorded bag (``bag/``, rosbag2 MCAP) and ``report.html``. Live receipts and progress go to an
optional ``on_event(kind, data)`` callback (the terminal display of ``captain run``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.core.result import Result
from captain_ros.evaluation.summary import EpisodeSummary
from captain_ros.policy.base import Policy, PolicyReply

log = logging.getLogger(__name__)

Event = Callable[[str, dict[str, Any]], None]


class LiveRobot:
    """Wraps a RobotCaller: forwards calls, reports each receipt as it happens, records them."""

    def __init__(self, inner: Any, on_event: Event | None = None) -> None:
        self.inner = inner
        self.backend = getattr(inner, "backend", None)
        self.on_event = on_event
        self.receipts: list[dict[str, Any]] = []
        self.t0 = time.perf_counter()
        self.start_wall_s = time.time()
        self.request_index = 0

    def call(self, name: str, kwargs: dict[str, Any]) -> Result:
        t = time.perf_counter()
        res = self.inner.call(name, kwargs)
        rec = {"t_s": t - self.t0, "duration_s": time.perf_counter() - t, "capability": name,
               "request_index": self.request_index,
               "success": res.success, "executed": res.executed,
               "failure_category": res.failure_category.value if res.failure_category else "",
               "message": res.message, "receipt": res.receipt}
        self.receipts.append(rec)
        if self.on_event:
            self.on_event("receipt", rec)
        return res

    def image(self, handle: str, camera: str) -> np.ndarray | None:
        return self.inner.image(handle, camera)


class LivePolicy(Policy):
    """Wraps a Policy: announces each request and its reply (progress display)."""

    def __init__(self, inner: Policy, on_event: Event | None = None,
                 robot: LiveRobot | None = None) -> None:
        self.inner = inner
        self.robot = robot
        self.name = inner.name
        self.on_event = on_event
        self.requests = 0

    def reset(self, task_name: str, seed: int) -> None:
        self.requests = 0
        self.inner.reset(task_name, seed)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        self.requests += 1
        if self.robot is not None:
            self.robot.request_index = self.requests
        if self.on_event:
            self.on_event("request", {"t": self.requests, "messages": len(messages)})
        reply = self.inner.act(messages, tools)
        if self.on_event:
            self.on_event("reply", {"t": self.requests, "reasoning": reply.reasoning or reply.content,
                                    "tool_calls": len(reply.tool_calls), "model_s": reply.model_s})
        return reply

    def close(self) -> None:
        self.inner.close()


def build_robot(task_name: str, seed: int, backend_name: str = "mujoco",
                backend_options: dict[str, Any] | None = None) -> tuple[Any, Any, Any]:
    """``(task, backend, RobotService)`` for one scene (``backend_options``: e.g. the PiPER's
    ``can``/``config``/``emulate``)."""
    from captain_ros.api.service import RobotService
    from captain_ros.backends import make_backend
    from captain_ros.motion.service import MotionService
    from captain_ros.perception.service import PerceptionService
    from captain_ros.tasks import get_task

    task = get_task(task_name)
    backend = make_backend(backend_name, task=task, seed=seed, **(backend_options or {}))
    service = RobotService(backend, MotionService(backend), PerceptionService(backend))
    return task, backend, service


def budgets_from(options: dict[str, Any]) -> Any:
    from captain_ros.harness.budgets import Budgets

    kw = {k: options[k] for k in ("max_requests", "max_wall_s", "max_physical_actions")
          if options.get(k) is not None}
    return Budgets(**kw)


def run_one(task_name: str, seed: int, policy_spec: str = "scripted", backend_name: str = "mujoco",
            out_dir: str | Path = "runs/episode", options: dict[str, Any] | None = None,
            on_event: Event | None = None, policy: Policy | None = None) -> EpisodeSummary:
    """Run one episode in this process and write its folder; returns the summary."""
    from captain_ros.harness.episode import run_episode
    from captain_ros.policy.factory import make_policy

    opts = dict(options or {})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    task, backend, service = build_robot(task_name, seed, backend_name,
                                         opts.get("backend_options"))
    robot = LiveRobot(service, on_event)
    pol = LivePolicy(policy or make_policy(policy_spec, opts), on_event, robot)
    try:
        hs = run_episode(task, seed, robot, pol, budgets_from(opts), out,
                         host_success=lambda: bool(task.success(backend.privileged_state())))
        try:
            milestones = task.milestones(backend.privileged_state())
            progress = sum(bool(m) for m in milestones) / max(1, len(milestones))
        except Exception:  # noqa: BLE001 - a task without milestones still has a summary
            progress = None
    finally:
        pol.close()
        backend.close()
    summary = EpisodeSummary(
        task=task_name, seed=int(seed), policy=policy_spec, backend=backend_name,
        outcome=hs.outcome, host_success=hs.host_success, strict_success=hs.strict_success,
        finished=hs.finish_called, false_finish=hs.finish_called and not hs.host_success,
        requests=hs.requests, physical_actions=hs.physical_actions,
        gate_rejections=hs.gate_rejections, wall_s=hs.wall_s, model_s=hs.model_s,
        harness_s=max(0.0, hs.wall_s - hs.model_s), backend_s=hs.backend_s,
        tokens_prompt=hs.prompt_tokens, tokens_completion=hs.completion_tokens,
        milestones=progress, out_dir=str(out),
        extra={"end_reason": hs.end_reason, "robot_calls": hs.robot_calls,
               "session_restarts": hs.session_restarts, "malformed_replies": hs.malformed_replies,
               "sandbox_violations": hs.sandbox_violations})
    if opts.get("record_bag", True):
        try:
            from captain_ros.evaluation.bag import write_episode_bag

            summary.extra["bag"] = str(write_episode_bag(out / "bag", robot.receipts, summary,
                                                            robot.start_wall_s))
        except Exception as exc:  # noqa: BLE001 - a missing bag never loses the episode
            log.warning("bag not written: %s", exc)
            summary.extra["bag_error"] = f"{type(exc).__name__}: {exc}"
    summary.write(out / "summary.json")
    if opts.get("report", True):
        from captain_ros.report.html import write_report

        write_report(out)
    return summary


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Entry point of an evaluation worker (plain dict in, plain dict out)."""
    import os

    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core per worker
    opts = dict(job.get("options") or {})
    opts.setdefault("report", False)  # eval folders stay light; `captain report DIR` renders later
    return run_one(job["task"], int(job["seed"]), job.get("policy", "scripted"),
                   job.get("backend", "mujoco"), job.get("out_dir") or "runs/eval_episode",
                   opts).to_dict()
