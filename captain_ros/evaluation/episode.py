"""One in-process episode: task scene -> backend -> robot services -> harness loop -> episode folder.

This is what ``captain run`` and every ``captain eval`` worker execute. :func:`local_setup`
builds the backend for ``(task, seed)``, the motion and perception services, the
:class:`~captain_ros.api.RobotService` and the privileged source, and assembles the
:class:`~captain_ros.harness.episode.setup.EpisodeSetup` with its observers: the live progress callback
(``on_event(kind, data)``: the terminal display of ``captain run``), the in-process bag writer
(``bag/``, rosbag2 MCAP) and the report (``report.html``). :func:`run_one` runs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from captain_ros.backends.registry import names
from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.evaluation.runner import worker_environment
from captain_ros.harness.episode.observers import CallEvent, EpisodeObserver
from captain_ros.harness.episode.setup import EpisodeSetup
from captain_ros.harness.record.backend_source import BackendPrivileged
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.report.observer import ReportObserver

log = logging.getLogger(__name__)

Event = Callable[[str, dict[str, Any]], None]
SIM_BACKENDS = names(ground_truth=True)
"""Backends with ground truth (privileged state, snapshots); hardware has none (the registry's)."""


class ProgressObserver(EpisodeObserver):
    """Forwards requests, replies and receipts to ``on_event`` (the terminal display)."""

    def __init__(self, on_event: Event) -> None:
        self.on_event = on_event

    def before_request(self, t: int) -> None:
        self.on_event("request", {"t": t})

    def on_reply(self, t: int, reply: PolicyReply) -> None:
        self.on_event(
            "reply",
            {
                "t": t,
                "reasoning": reply.reasoning or reply.content,
                "tool_calls": len(reply.tool_calls),
                "model_s": reply.model_s,
            },
        )

    def on_call(self, event: CallEvent) -> None:
        res = event.result
        self.on_event(
            "receipt",
            {
                "request_index": event.request,
                "capability": event.name,
                "duration_s": event.duration_s,
                "success": res.success,
                "executed": res.executed,
                "failure_category": res.failure_category.value if res.failure_category else "",
                "message": res.message,
                "receipt": res.receipt,
            },
        )


class RuntimeObserver(EpisodeObserver):
    """Writes what ran the policy (its engine, model file, threads, grammar: ``Policy.describe``)
    into the summary's ``extra`` (``engine`` and ``policy_runtime``)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def amend(self, record: EpisodeRecord) -> EpisodeRecord:
        import dataclasses

        runtime = dict(self.policy.describe())
        return dataclasses.replace(
            record,
            extra={
                **record.extra,
                "engine": runtime.get("engine", "none"),
                "policy_runtime": runtime,
            },
        )


def check_episode_args(task: str, seed: int, policy: str, backend: str | None = None) -> None:
    """Refuse an unknown task, a negative seed or a policy spec that cannot be built
    (:class:`~captain_ros.core.errors.CaptainError`) before anything is started (the model
    itself is loaded later); ``captain run | eval`` and ``captain up`` call it first."""
    from captain_ros.policy.factory import check_spec
    from captain_ros.tasks import get_task

    get_task(task, backend).rng(
        seed
    )  # unknown task / negative seed: InvalidArgumentError, UnknownNameError
    check_spec(policy)


def build_robot(
    task_name: str,
    seed: int,
    backend_name: str = "mujoco",
    backend_options: dict[str, Any] | None = None,
    perception: dict[str, Any] | None = None,
) -> tuple[Any, Any, Any]:
    """``(task, backend, RobotService)`` for one scene (``backend_options``: e.g. the PiPER's
    ``can``/``config``/``emulate``; ``perception``: the fields of
    :class:`~captain_ros.perception.models.PerceptionModels`, e.g. ``{"segmenter": "sam", ...}``)."""
    from captain_ros.api.service import RobotService
    from captain_ros.backends import make_backend
    from captain_ros.motion.service import MotionService
    from captain_ros.perception.models import PerceptionModels
    from captain_ros.tasks import get_task

    task = get_task(task_name, backend_name)
    models = PerceptionModels(**(perception or {}))  # checked before the rig is started
    backend = make_backend(backend_name, task.sample(seed), **(backend_options or {}))
    service = RobotService(backend, MotionService(backend), models.service(backend))
    return task, backend, service


def budgets_from(options: dict[str, Any]) -> Any:
    """Budgets from CLI options (``budget_mode="rl"``: the paper's RL budget of 120 actions)."""
    from captain_ros.harness.episode.budgets import Budgets

    base = Budgets.rl() if options.get("budget_mode") == "rl" else Budgets()
    kw = {
        k: options[k]
        for k in ("max_requests", "max_wall_s", "max_physical_actions")
        if options.get(k) is not None
    }
    return base.replace(**kw) if kw else base


def local_setup(
    task_name: str,
    seed: int,
    policy_spec: str = "scripted",
    backend_name: str = "mujoco",
    out_dir: str | Path = "runs/episode",
    options: dict[str, Any] | None = None,
    on_event: Event | None = None,
    policy: Policy | None = None,
) -> tuple[EpisodeSetup, Any]:
    """The in-process :class:`EpisodeSetup` of one episode and its backend (close it after)."""
    from captain_ros.harness.episode import EpisodeOptions
    from captain_ros.harness.episode.profiles import resolve_profile
    from captain_ros.harness.sandbox.session import SessionConfig
    from captain_ros.policy.factory import make_policy
    from captain_ros.policy.students import expand_policy

    policy_spec, opts = expand_policy(policy_spec, dict(options or {}))  # student: its folder
    out = Path(out_dir)
    profile = resolve_profile(
        opts.get("profile"), opts.get("model_folder")
    )  # before any model loads
    task, backend, service = build_robot(
        task_name, seed, backend_name, opts.get("backend_options"), opts.get("perception")
    )
    try:
        pol = policy or make_policy(policy_spec, opts)
    except BaseException:
        backend.close()
        raise
    observers: list[EpisodeObserver] = [RuntimeObserver(pol)]
    if on_event is not None:
        observers.append(ProgressObserver(on_event))
    if opts.get("record_bag", True):
        from captain_ros.evaluation.bag import BagObserver

        observers.append(
            BagObserver(EpisodeFiles(out).bag, service, images=bool(opts.get("bag_images", True)))
        )
    if opts.get("report", True):
        observers.append(ReportObserver(out))
    setup = EpisodeSetup(
        task=task,
        seed=int(seed),
        robot=service,
        policy=pol,
        out_dir=out,
        budgets=budgets_from(opts),
        options=EpisodeOptions(
            policy_name=policy_spec,
            backend_name=backend_name,
            missed_finish_after=int(opts.get("missed_finish_after", 15)),
            profile=profile,
        ),
        privileged=BackendPrivileged(backend) if backend_name in SIM_BACKENDS else None,
        observers=observers,
        session_config=SessionConfig(strict_sandbox=True) if opts.get("strict_sandbox") else None,
        overwrite=bool(opts.get("overwrite", False)),
    )
    return setup, backend


def run_one(
    task_name: str,
    seed: int,
    policy_spec: str = "scripted",
    backend_name: str = "mujoco",
    out_dir: str | Path = "runs/episode",
    options: dict[str, Any] | None = None,
    on_event: Event | None = None,
    policy: Policy | None = None,
) -> EpisodeRecord:
    """Run one episode in this process and write its folder; returns its record."""
    setup, backend = local_setup(
        task_name, seed, policy_spec, backend_name, out_dir, options, on_event, policy
    )
    try:
        return setup.run()
    finally:
        setup.policy.close()
        backend.close()


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Entry point of an evaluation worker (plain dict in, plain dict out)."""
    worker_environment()
    opts = dict(job.get("options") or {})
    opts.setdefault("report", False)  # eval folders stay light; `captain report DIR` renders later
    return run_one(
        job["task"],
        int(job["seed"]),
        job.get("policy", "scripted"),
        job.get("backend", "mujoco"),
        job.get("out_dir") or "runs/eval_episode",
        opts,
    ).to_dict()
