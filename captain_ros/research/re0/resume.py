"""Resuming a generation: every finished episode and rollout of ``captain learn re0`` is reused.

A learned student's generation is hours of CPU (collection, paired rollouts, distillation,
held-out evaluation), longer than one sitting. Every job the generation runs (a collected
episode, one arm of a paired draw, a run of mu, a held-out episode) writes ``job_record.json``
into its episode folder once it lands: the job as plain data, the *inputs it was a function of*
and its :class:`~captain_ros.harness.record.episode_record.EpisodeRecord`. With ``resume``, :func:`run_jobs`
reuses a folder's record when the same job over the same inputs finished without an error, and
runs the rest (a half-written folder is cleared first).

The inputs are fingerprinted by the name, size and modification time of the top-level files of
every ``model:FOLDER`` the job names (a redistilled child under the same path is a different
job) and of a rollout's recorded source episode (a recollected episode invalidates the
rollouts restored from it). The episodes are deterministic functions of the job and those
inputs (the harness's identity tests), so a resumed generation takes the same decisions, writes
the same ledger and builds the same corpus as an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from captain_ros.evaluation.runner import DEFAULT_JOB, EpisodeJob, run_local
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.research.re0.seats import MODEL_PREFIX

RECORD_FILE = "job_record.json"


def _model_at(text: str) -> int:
    """Where the folder of a ``model:FOLDER`` spec starts in ``text`` (-1: none)."""
    i = text.find(MODEL_PREFIX)
    return i + len(MODEL_PREFIX) if i >= 0 else -1


def _model_folders(obj: Any) -> set[str]:
    if isinstance(obj, str):
        j = _model_at(obj)
        return {obj[j:]} if j >= 0 else set()
    if isinstance(obj, dict):
        return set().union(*(_model_folders(v) for v in obj.values()))
    if isinstance(obj, list | tuple):
        return set().union(*(_model_folders(v) for v in obj))
    return set()


def fingerprint(folder: str | Path) -> list[list[Any]]:
    """(name, size, mtime_ns) of the regular top-level files of ``folder`` (none: empty)."""
    out: list[list[Any]] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return out
    for e in entries:
        if e.is_file() and e.name != RECORD_FILE:
            st = e.stat()
            out.append([e.name, st.st_size, st.st_mtime_ns])
    return out


def canonical(obj: Any) -> Any:
    """``obj`` with every ``model:FOLDER`` (in values and keys) spelled with the absolute path: a
    folder named relatively by one caller and absolutely by another is the same input (a resumed
    experiment reran 20 held-out episodes over that difference)."""
    if isinstance(obj, str):
        j = _model_at(obj)
        return obj[:j] + os.path.abspath(obj[j:]) if 0 <= j < len(obj) else obj
    if isinstance(obj, dict):
        return {canonical(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    return obj


def identity(job: EpisodeJob) -> dict[str, Any]:
    """The job as JSON data plus the fingerprints of the folders it reads, :func:`canonical`."""
    data = canonical(json.loads(json.dumps(asdict(job), sort_keys=True, default=str)))
    inputs = {f"model:{f}": fingerprint(f) for f in sorted(_model_folders(data))}
    source = ((data.get("options") or {}).get("rollout") or {}).get("event", {}).get("source")
    if source:
        inputs[f"source:{source}"] = fingerprint(source)
    return {"job": data, "inputs": inputs}


def finished(job: EpisodeJob) -> EpisodeRecord | None:
    """The record of ``job`` if its folder holds that very job, finished without an error."""
    try:
        stored = json.loads((Path(job.out_dir) / RECORD_FILE).read_text())
        if canonical(stored.get("identity")) != identity(job):  # records of older spellings
            return None
        rec = EpisodeRecord.from_dict(stored["record"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return None if rec.outcome == "error" else rec


def _save(job: EpisodeJob, rec: EpisodeRecord) -> None:
    folder = Path(job.out_dir)
    if not folder.is_dir():  # a job that died before writing anything
        return
    tmp = folder / (RECORD_FILE + ".tmp")
    tmp.write_text(json.dumps({"identity": identity(job), "record": rec.to_dict()}, default=str))
    tmp.replace(folder / RECORD_FILE)


def run_jobs(
    jobs: Sequence[EpisodeJob],
    workers: int,
    job_path: str = DEFAULT_JOB,
    resume: bool = False,
) -> list[EpisodeRecord]:
    """:func:`~captain_ros.evaluation.runner.run_local` with every landed job's record saved,
    and with ``resume`` the finished ones reused (their records carry ``extra["resumed"]``)."""
    out: dict[int, EpisodeRecord] = {}
    todo: list[int] = []
    for i, job in enumerate(jobs):
        rec = finished(job) if resume else None
        if rec is not None:
            out[i] = replace(rec, extra={**rec.extra, "resumed": True})
            continue
        if resume and Path(job.out_dir).exists():
            shutil.rmtree(job.out_dir)  # a half-written or different job's folder
        todo.append(i)
    by_dir = {jobs[i].out_dir: jobs[i] for i in todo}

    def land(rec: EpisodeRecord) -> None:
        job = by_dir.get(rec.out_dir)
        if job is not None:
            _save(job, rec)

    ran = run_local([jobs[i] for i in todo], workers, job_path, on_result=land)
    out.update(zip(todo, ran, strict=True))
    return [out[i] for i in range(len(jobs))]


def reused(records: Sequence[EpisodeRecord]) -> int:
    return sum(bool(r.extra.get("resumed")) for r in records)
