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
crashes becomes an ``error`` record (the runner's guard), never a crashed round. A job whose
folder already holds its finished rollout (:func:`finished_record`: the same episode key,
sampling seed and policy version, from a run that stopped after its rollouts) is not run again:
its record is read back. Worker processes exit when the run's process dies (a kill or the OOM
killer), instead of rolling out for nobody.

Start states: round k draws ``starts`` training seeds (0-999) without replacement from a generator
seeded by ``(seed, k)``, spread over the tasks in turn, each rolled out ``group`` times with its
own sampling seed. The held-out monitor runs every held-out seed of every task once, with a fixed
sampling seed per (task, seed) (common random numbers across evaluations) and no early stop.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.core.episode_folder import EpisodeFiles, read_json_object
from captain_ros.core.errors import RecordError
from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, PolicyConfig
from captain_ros.evaluation.runner import (
    EpisodeJob,
    submit_local,
    submit_ray,
    warn_oversubscription,
    watch_parent,
)
from captain_ros.harness.record.episode_record import EpisodeRecord
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
    episode: EpisodeConfig = field(default_factory=EpisodeConfig)
    """Every rollout's episode (budgets, profile, recording); each job sets its task, seed and
    folder."""
    threads: int = 1
    served: dict[str, str] | None = None
    """``{"base_url", "model"}``: rollouts from a vLLM server (:mod:`.served`), not in-process."""
    temperature: float = 1.0
    """The student's sampling temperature (its recorded log-probs are of that distribution)."""
    engine: str = "transformers"
    """What the in-process student samples with (``transformers`` | ``llamacpp``)."""


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
        "engine": spec.engine,
    }
    if spec.served:
        rl["served"] = dict(spec.served)
    episode = spec.episode.replace(
        task=task,
        seed=int(seed),
        out_dir=str(out_dir),
        policy=PolicyConfig("rl-student"),
        backend=BackendConfig(spec.backend),
    )
    return EpisodeJob(
        task,
        int(seed),
        "rl-student",
        spec.backend,
        str(out_dir),
        {**episode.to_mapping(), "rl": rl},
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


def finished_record(job: EpisodeJob) -> EpisodeRecord | None:
    """The record of ``job`` if its folder already holds that very rollout, finished: a readable
    ``summary.json`` and a ``rollout.json`` of the job's episode key, sampling seed and policy
    version (the episode is a function of those and the run's options, which a resume keeps).

    Not RE-0's ``research.re0.resume.finished`` (file fingerprints of the folders a job reads): a
    resumed RL run republishes its adapter and critic folders, so their fingerprints change while
    the versions they hold do not; here the version number is the input's identity."""
    from captain_ros.learn.rl.sync import read_version

    folder = Path(job.out_dir)
    rl = dict((job.options or {}).get("rl") or {})
    try:
        files = EpisodeFiles(folder)
        roll = read_json_object(files.rollout)
        rec = EpisodeRecord.from_dict(files.read_summary())
        same = (
            roll.get("episode_key") == rl.get("episode_key")
            and int(roll.get("sample_seed", -1)) == int(rl.get("sample_seed", -2))
            and int(roll.get("version", -1)) == read_version(str(rl.get("adapter")))
        )
    except (RecordError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return rec if same and not rec.error else None


class Pending:
    """Submitted jobs; :meth:`wait` returns their records in job order."""

    def __init__(
        self,
        jobs: Sequence[EpisodeJob],
        handles: list[Any],
        kind: str,
        ray: Any = None,
        done: dict[int, EpisodeRecord] | None = None,
    ):
        """``handles`` belong to the jobs not in ``done`` (job index -> record read back)."""
        self.jobs, self.handles, self.kind, self.ray = list(jobs), handles, kind, ray
        self.done = dict(done or {})
        self.versions: tuple[int, int] = (-1, -1)  # (policy, critic) the jobs name

    @property
    def reused(self) -> int:
        """Jobs whose finished rollout was read back instead of run."""
        return len(self.done)

    def wait(self, on_result: Callable[[EpisodeRecord], None] | None = None) -> list[EpisodeRecord]:
        from captain_ros.evaluation.runner import _guarded

        out: list[EpisodeRecord] = []
        h = iter(self.handles)
        for i, job in enumerate(self.jobs):
            if i in self.done:
                out.append(self.done[i])
                if on_result is not None:
                    on_result(self.done[i])
                continue
            try:
                if self.kind == "inline":
                    d = _guarded(JOB_PATH, asdict(job))
                elif self.kind == "ray":
                    d = self.ray.get(next(h))
                else:
                    d = next(h).result()
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
        if ray_address in (None, "", "local"):  # a cluster's nodes have their own cores
            warn_oversubscription(self.workers)
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
                max_workers=self.workers,
                mp_context=mp.get_context("spawn"),
                initializer=watch_parent,
            )

    def submit(self, jobs: Sequence[EpisodeJob]) -> Pending:
        done = {i: r for i, j in enumerate(jobs) if (r := finished_record(j)) is not None}
        todo = [j for i, j in enumerate(jobs) if i not in done]
        for j in todo:  # a rollout that is run starts from an empty folder
            shutil.rmtree(j.out_dir, ignore_errors=True)
        if self._ray is not None:
            return Pending(jobs, submit_ray(self._ray, todo, JOB_PATH), "ray", self._ray, done)
        if self._pool is not None:
            return Pending(jobs, submit_local(self._pool, todo, JOB_PATH), "pool", done=done)
        return Pending(jobs, [], "inline", done=done)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
