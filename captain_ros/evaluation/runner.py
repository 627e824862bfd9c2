"""Run many episodes: parallel worker processes on one machine, or a Ray cluster.

An evaluation is a list of :class:`EpisodeJob` (task, seed, policy, backend, episode folder). Each
job runs in a fresh *spawned* process (MuJoCo, torch and the sandbox session do not survive
``fork`` well), or as a Ray task when ``ray_address`` is given; ``ray`` is imported only then.
A job that crashes becomes an ``error`` episode, never a crashed evaluation.

Results go to ``<out>/eval.json`` (episodes, per-task aggregates, overall aggregate) and
``<out>/eval.png``.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing as mp
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.evaluation.config import EpisodeConfig, RecordingConfig
from captain_ros.evaluation.plot import plot_eval
from captain_ros.evaluation.summary import aggregate, by_task
from captain_ros.harness.record.episode_record import EpisodeRecord

DEFAULT_JOB = "captain_ros.evaluation.episode:run_job"


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run (plain data: it crosses process and machine boundaries).

    Attributes:
        task / seed: What to run.
        policy: ``scripted``, ``openai``, ``transformers`` or ``replay:FILE``.
        backend: ``mujoco`` or ``fake``.
        out_dir: Episode folder (summary.json, trajectory.jsonl, report.html, bag).
        options: The job's payload as plain data: an episode job's
            :meth:`~captain_ros.evaluation.config.EpisodeConfig.to_mapping` (RL rollouts add
            ``rl``; RE-0 jobs carry their own, :mod:`captain_ros.research.re0.rollouts`).
    """

    task: str
    seed: int
    policy: str = "scripted"
    backend: str = "mujoco"
    out_dir: str = ""
    options: dict[str, Any] = field(default_factory=dict)


def parse_seeds(text: str) -> list[int]:
    """``"1000-1009"``, ``"3,5,9"`` or mixes like ``"1-3,7"`` -> sorted unique seeds."""
    seeds: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part[1:]:
            a, b = part.split("-", 1) if not part.startswith("-") else (part, "")
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError(f"seed range {part!r} is empty (end before start)")
            seeds.update(range(lo, hi + 1))
        else:
            seeds.add(int(part))
    if not seeds or min(seeds) < 0:
        raise ValueError(f"no valid non-negative seeds in {text!r}")
    return sorted(seeds)


def resolve(path: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Import ``"module:function"``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _guarded(job_path: str, job: dict[str, Any]) -> dict[str, Any]:
    """Run one job; turn any exception into an ``error`` summary (runs in the worker)."""
    try:
        return resolve(job_path)(job)
    except BaseException as exc:  # noqa: BLE001 - a crashed episode is a result, not a crash
        if isinstance(exc, KeyboardInterrupt):
            raise
        return EpisodeRecord.error_record(
            job["task"],
            job["seed"],
            job["policy"],
            job["backend"],
            traceback.format_exc(),
            job.get("out_dir", ""),
        ).to_dict()


def worker_environment() -> None:
    """What every worker entry point sets before its episode: headless MuJoCo rendering (EGL) and
    one OpenMP thread per worker (the pool's processes are the parallelism; torch, imported by the
    episode after this, reads it). The entry points call it themselves: a Ray task never runs the
    pool's initializer. A value the caller set in the environment is kept."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def oversubscription(workers: int, env: Any = None, cores: int | None = None) -> str | None:
    """A one-line warning when the caller's ``OMP_NUM_THREADS`` (which :func:`worker_environment`
    keeps) times ``workers`` exceeds the cores: each worker's torch then spins threads against the
    others' (measured: a student's request 5x slower with 2 workers x 2 threads on 2 cores)."""
    env = os.environ if env is None else env
    cores = cores or os.cpu_count() or 1
    try:
        threads = int(env.get("OMP_NUM_THREADS", "1"))
    except ValueError:
        return None
    if workers <= 1 or threads * workers <= cores:
        return None
    return (
        f"warning: OMP_NUM_THREADS={threads} with {workers} workers is {threads * workers} "
        f"threads on {cores} cores; unset it (workers default to 1 thread each) or lower it"
    )


def warn_oversubscription(workers: int) -> None:
    """Print :func:`oversubscription`'s warning, if any, to stderr: every pool of episode workers
    (``run_local``, the RL rollout pool, CoEvolve's evaluation) calls it before it starts them."""
    warning = oversubscription(workers)
    if warning:
        print(warning, file=sys.stderr)


def watch_parent() -> None:
    """Worker initializer: exit when the process that started the pool is gone.

    A worker busy in a long job never reads its call queue, so it would not notice a killed
    parent; this thread checks the parent once a second and ends the worker when it has gone.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def run_local(
    jobs: Sequence[EpisodeJob],
    workers: int,
    job_path: str = DEFAULT_JOB,
    on_result: Callable[[EpisodeRecord], None] | None = None,
) -> list[EpisodeRecord]:
    """Run ``jobs`` in ``workers`` spawned processes (in this process when ``workers <= 1``)."""
    results: dict[int, EpisodeRecord] = {}
    if workers <= 1:
        for i, job in enumerate(jobs):
            results[i] = EpisodeRecord.from_dict(_guarded(job_path, asdict(job)))
            if on_result:
                on_result(results[i])
        return [results[i] for i in range(len(jobs))]
    warn_oversubscription(workers)
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=watch_parent) as pool:
        futures = {pool.submit(_guarded, job_path, asdict(job)): i for i, job in enumerate(jobs)}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                results[i] = EpisodeRecord.from_dict(fut.result())
            except BaseException as exc:  # noqa: BLE001 - a dead worker process
                job = jobs[i]
                results[i] = EpisodeRecord.error_record(
                    job.task, job.seed, job.policy, job.backend, repr(exc), job.out_dir
                )
            if on_result:
                on_result(results[i])
    return [results[i] for i in range(len(jobs))]


def submit_local(pool: Any, jobs: Sequence[EpisodeJob], job_path: str = DEFAULT_JOB) -> list[Any]:
    """Submit ``jobs`` to a caller-owned ``concurrent.futures`` executor (e.g. a long-lived pool
    of spawned workers that keep a model loaded across rounds); returns futures of record dicts
    (a crash inside a job already becomes an ``error`` record)."""
    return [pool.submit(_guarded, job_path, asdict(job)) for job in jobs]


def submit_ray(
    ray: Any, jobs: Sequence[EpisodeJob], job_path: str = DEFAULT_JOB, num_cpus: float = 1.0
) -> list[Any]:
    """Submit ``jobs`` as Ray tasks on an initialised ``ray`` module; returns object refs."""
    remote = ray.remote(num_cpus=num_cpus, max_retries=1)(_guarded)
    return [remote.remote(job_path, asdict(job)) for job in jobs]


def run_ray(
    jobs: Sequence[EpisodeJob],
    address: str,
    job_path: str = DEFAULT_JOB,
    on_result: Callable[[EpisodeRecord], None] | None = None,
    num_cpus: float = 1.0,
) -> list[EpisodeRecord]:
    """Run ``jobs`` on the Ray cluster at ``address`` (``"local"`` starts an in-process one)."""
    import ray  # only when asked for

    if not ray.is_initialized():
        if address == "local":
            ray.init(
                num_cpus=max(1, int(num_cpus * 2)), include_dashboard=False, log_to_driver=False
            )
        else:
            ray.init(address=address, log_to_driver=False)
    refs = submit_ray(ray, jobs, job_path, num_cpus)
    index = {ref: i for i, ref in enumerate(refs)}
    results: dict[int, EpisodeRecord] = {}
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            i = index[ref]
            try:
                results[i] = EpisodeRecord.from_dict(ray.get(ref))
            except Exception as exc:  # noqa: BLE001 - a lost node or worker
                job = jobs[i]
                results[i] = EpisodeRecord.error_record(
                    job.task, job.seed, job.policy, job.backend, repr(exc), job.out_dir
                )
            if on_result:
                on_result(results[i])
    return [results[i] for i in range(len(jobs))]


def make_jobs(
    tasks: Iterable[str],
    seeds: Iterable[int],
    out_dir: str | Path,
    config: EpisodeConfig | None = None,
) -> list[EpisodeJob]:
    """One job per (task, seed), each with its own folder ``<out>/<task>/seed_<seed>``:
    ``config`` with that task, seed and folder (default: the scripted policy on MuJoCo without
    ``report.html``; evaluation folders stay light, ``captain report DIR`` renders later)."""
    base = config or EpisodeConfig(recording=RecordingConfig(report=False))
    out = Path(out_dir)
    jobs = []
    for t in tasks:
        for s in seeds:
            cfg = base.replace(task=t, seed=int(s), out_dir=str(out / t / f"seed_{s:05d}"))
            jobs.append(
                EpisodeJob(
                    t, cfg.seed, cfg.policy.spec, cfg.backend.name, cfg.out_dir, cfg.to_mapping()
                )
            )
    return jobs


def evaluate(
    jobs: Sequence[EpisodeJob],
    out_dir: str | Path,
    workers: int = 1,
    ray_address: str | None = None,
    job_path: str = DEFAULT_JOB,
    on_result: Callable[[EpisodeRecord], None] | None = None,
) -> dict[str, Any]:
    """Run ``jobs`` and write ``eval.json`` and ``eval.png`` into ``out_dir``; returns the report.

    Raises:
        InvalidArgumentError: ``workers`` is not a positive integer (nothing is written).
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgumentError(f"workers must be an integer >= 1, got {workers!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if ray_address:
        episodes = run_ray(jobs, ray_address, job_path, on_result)
    else:
        episodes = run_local(jobs, workers, job_path, on_result)
    wall = time.perf_counter() - start
    per_task = by_task(episodes)
    policies = sorted({j.policy for j in jobs})
    backends = sorted({j.backend for j in jobs})
    report: dict[str, Any] = {
        "jobs": len(jobs),
        "workers": workers,
        "ray_address": ray_address,
        "wall_s": wall,
        "episodes_per_hour": 3600.0 * len(episodes) / wall if wall > 0 else 0.0,
        "policy": policies,
        "backend": backends,
        "overall": aggregate(episodes),
        "per_task": per_task,
        "episodes": [e.to_dict() for e in episodes],
    }
    (out / "eval.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    if episodes:
        plot_eval(
            per_task, out / "eval.png", title=f"{', '.join(policies)} on {', '.join(backends)}"
        )
    return report


def with_out_dir(job: EpisodeJob, out_dir: str) -> EpisodeJob:
    return replace(job, out_dir=out_dir)
