"""Rollout jobs and the pool that runs them, on top of the evaluation runner.

A round is a list of :class:`~captain_ros.evaluation.runner.EpisodeJob` whose job function is
:func:`~captain_ros.learn.rl.rollout.run_rollout_job`. :class:`RolloutPool` runs them

- in this process (``workers <= 1``),
- in a long-lived pool of spawned worker processes (``workers > 1``): the pool lives for the whole
  run, so each worker loads the student once and afterwards only copies in new adapter versions,
- or as Ray tasks (``ray_address``; ``"local"`` starts an in-process cluster) through the
  runner's :func:`~captain_ros.evaluation.runner.submit_ray`; Ray reuses its worker processes, so
  the per-process model cache works there too (the output folder must be on a shared file system).

:meth:`RolloutPool.submit` returns at once; :meth:`Pending.wait` collects the records. A job that
crashes becomes an ``error`` record (the runner's guard), never a crashed round.

Start states: round k draws ``starts`` training seeds (0-999) without replacement from a generator
seeded by ``(seed, k)``, spread over the tasks in turn, each rolled out ``group`` times with its
own sampling seed. The held-out monitor runs every held-out seed of every task once, with a fixed
sampling seed per (task, seed) (common random numbers across evaluations) and no early stop.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.evaluation.runner import EpisodeJob, submit_local, submit_ray
from captain_ros.harness.record import EpisodeRecord
from captain_ros.learn.rl.rollout import JOB_PATH

TRAIN_SEEDS = range(0, 1000)
"""Start states RL may draw; held-out seeds (1000-1999) are for the monitor only."""


def _seed32(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:4], "big")


@dataclass(frozen=True)
class JobSpec:
    """What every rollout job of a run shares."""

    base: str
    backend: str
    out: str
    max_new_tokens: int = 256
    device: str = "cpu"
    options: dict[str, Any] = field(default_factory=dict)
    threads: int = 1
    served: dict[str, str] | None = None
    """``{"base_url", "model"}``: rollouts from a vLLM server (:mod:`.served`), not in-process."""
    temperature: float = 1.0
    """The student's sampling temperature (its recorded log-probs are of that distribution)."""


def round_starts(
    seed: int, round_index: int, tasks: Sequence[str], starts: int
) -> list[tuple[str, int]]:
    """The round's start states: ``starts`` (task, train seed) pairs, tasks in turn."""
    rng = np.random.default_rng([int(seed), int(round_index)])
    seeds = rng.choice(len(TRAIN_SEEDS), size=starts, replace=False)
    return [(tasks[i % len(tasks)], int(TRAIN_SEEDS[int(s)])) for i, s in enumerate(seeds)]


def _job(
    spec: JobSpec,
    task: str,
    seed: int,
    out_dir: Path,
    adapter: Path,
    critic: str | None,
    early_stop: bool,
    key: str,
    sample_seed: int,
) -> EpisodeJob:
    rl: dict[str, Any] = {
        "base": spec.base,
        "adapter": str(adapter),
        "critic": critic,
        "early_stop": early_stop,
        "episode_key": key,
        "sample_seed": sample_seed,
        "max_new_tokens": spec.max_new_tokens,
        "temperature": spec.temperature,
        "device": spec.device,
        "threads": spec.threads,
    }
    if spec.served:
        rl["served"] = dict(spec.served)
    return EpisodeJob(
        task, int(seed), "rl-student", spec.backend, str(out_dir), {**spec.options, "rl": rl}
    )


def round_jobs(
    spec: JobSpec,
    run_seed: int,
    round_index: int,
    tasks: Sequence[str],
    starts: int,
    group: int,
    adapter: Path,
    critic: str | None,
    early_stop: bool,
) -> list[EpisodeJob]:
    """``starts x group`` rollout jobs of round ``round_index`` (folders under OUT/rounds)."""
    root = Path(spec.out) / "rounds" / f"r{round_index:04d}"
    jobs = []
    for task, seed in round_starts(run_seed, round_index, tasks, starts):
        for g in range(group):
            key = f"{task}:{seed}:r{round_index}:g{g}"
            jobs.append(
                _job(
                    spec,
                    task,
                    seed,
                    root / task / f"seed_{seed:05d}" / f"g{g}",
                    adapter,
                    critic,
                    early_stop,
                    key,
                    _seed32(run_seed, key),
                )
            )
    return jobs


def heldout_jobs(
    spec: JobSpec,
    run_seed: int,
    round_index: int,
    tasks: Sequence[str],
    seeds: Sequence[int],
    adapter: Path,
) -> list[EpisodeJob]:
    """One monitor episode per (task, held-out seed); no early stop, no critic."""
    root = Path(spec.out) / "heldout" / f"r{round_index:04d}"
    return [
        _job(
            spec,
            task,
            s,
            root / task / f"seed_{s:05d}",
            adapter,
            None,
            False,
            f"{task}:{s}:heldout",
            _seed32(run_seed, task, s, "heldout"),
        )
        for task in tasks
        for s in seeds
    ]


class Pending:
    """Submitted jobs; :meth:`wait` returns their records in job order."""

    def __init__(self, jobs: Sequence[EpisodeJob], handles: list[Any], kind: str, ray: Any = None):
        self.jobs, self.handles, self.kind, self.ray = list(jobs), handles, kind, ray
        self.versions: tuple[int, int] = (-1, -1)  # (policy, critic) the jobs name

    def wait(self, on_result: Callable[[EpisodeRecord], None] | None = None) -> list[EpisodeRecord]:
        from captain_ros.evaluation.runner import _guarded

        out: list[EpisodeRecord] = []
        for i, job in enumerate(self.jobs):
            try:
                if self.kind == "inline":
                    d = _guarded(JOB_PATH, asdict(job))
                elif self.kind == "ray":
                    d = self.ray.get(self.handles[i])
                else:
                    d = self.handles[i].result()
                rec = EpisodeRecord.from_dict(d)
            except Exception as exc:  # noqa: BLE001 - a dead worker process or a lost node
                rec = EpisodeRecord.error_record(
                    job.task, job.seed, job.policy, job.backend, repr(exc), job.out_dir
                )
            out.append(rec)
            if on_result is not None:
                on_result(rec)
        return out


class RolloutPool:
    """Runs rollout jobs inline, in spawned worker processes, or on Ray (see module docstring)."""

    def __init__(self, workers: int = 1, ray_address: str | None = None) -> None:
        self.workers = max(1, int(workers))
        self.ray_address = ray_address
        self._pool: Any = None
        self._ray: Any = None
        if ray_address:
            import ray

            if not ray.is_initialized():
                if ray_address == "local":
                    ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False)
                else:
                    ray.init(address=ray_address, log_to_driver=False)
            self._ray = ray
        elif self.workers > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=mp.get_context("spawn")
            )

    def submit(self, jobs: Sequence[EpisodeJob]) -> Pending:
        if self._ray is not None:
            return Pending(jobs, submit_ray(self._ray, jobs, JOB_PATH), "ray", self._ray)
        if self._pool is not None:
            return Pending(jobs, submit_local(self._pool, jobs, JOB_PATH), "pool")
        return Pending(jobs, [], "inline")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
