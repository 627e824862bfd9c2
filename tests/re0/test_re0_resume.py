"""A generation resumes: finished episodes and rollouts are reused when the same job ran over the
same inputs (a whole resumed generation: ``test_re0_generation.py``)."""

from __future__ import annotations

import json
import os

from captain_ros.evaluation.runner import EpisodeJob
from captain_ros.research.re0.loop import STUDENT_JOB
from captain_ros.research.re0.resume import RECORD_FILE, finished, identity, run_jobs

STUDENT = "scripted-faulty:place_offset=1,skip_verify=1,offset_m=0.12"


def _job(tmp_path, seed: int, policy: str = STUDENT) -> EpisodeJob:
    return EpisodeJob(
        "pick_place", seed, policy, "fake", str(tmp_path / f"seed_{seed}"), {"profile": "default"}
    )


def test_finished_jobs_are_reused_and_others_rerun(tmp_path):
    jobs = [_job(tmp_path, 0), _job(tmp_path, 3)]
    first = run_jobs(jobs, 1, STUDENT_JOB)
    assert all((tmp_path / f"seed_{s}" / RECORD_FILE).exists() for s in (0, 3))
    assert not any(r.extra.get("resumed") for r in first)
    again = run_jobs(jobs, 1, STUDENT_JOB, resume=True)
    assert all(r.extra["resumed"] for r in again)
    assert [r.strict_success for r in again] == [r.strict_success for r in first]
    assert [r.requests for r in again] == [r.requests for r in first]
    # a half-written folder (no record) is cleared and rerun; a changed job is not reused
    (tmp_path / "seed_3" / RECORD_FILE).unlink()
    (tmp_path / "seed_3" / "stale.txt").write_text("left by a killed run")
    other = EpisodeJob(**{**jobs[0].__dict__, "options": {"profile": "default", "budgets": None}})
    assert finished(other) is None and finished(jobs[0]) is not None
    third = run_jobs(jobs, 1, STUDENT_JOB, resume=True)
    assert [bool(r.extra.get("resumed")) for r in third] == [True, False]
    assert not (tmp_path / "seed_3" / "stale.txt").exists()
    assert third[1].requests == first[1].requests


def test_a_rewritten_model_folder_is_a_different_job(tmp_path):
    model = tmp_path / "student"
    model.mkdir()
    (model / "adapter_model.safetensors").write_bytes(b"v1")
    job = _job(tmp_path, 0, f"model:{model}")
    before = identity(job)
    assert before["inputs"][f"model:{model}"][0][:2] == ["adapter_model.safetensors", 2]
    (model / "adapter_model.safetensors").write_bytes(b"v2 weights")
    assert identity(job) != before


def test_a_model_folder_named_relatively_or_absolutely_is_the_same_job(tmp_path, monkeypatch):
    """``captain learn re0`` names its child ``model:runs/.../student``; the RE-OPD experiment's
    control names it ``model:/abs/runs/.../student``: one job, reused, not rerun."""
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "runs" / "student"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    rel = _job(tmp_path, 0, "model:runs/student")
    absolute = _job(tmp_path, 0, f"model:{model}")
    assert identity(rel) == identity(absolute)
    assert identity(rel)["job"]["policy"] == f"model:{os.path.abspath('runs/student')}"
    folder = tmp_path / "seed_0"
    folder.mkdir()
    old = {  # a record written before the spelling was canonical: the relative name as it was
        "job": {**identity(rel)["job"], "policy": "model:runs/student"},
        "inputs": {"model:runs/student": identity(rel)["inputs"][f"model:{model}"]},
    }
    rec = {
        "task": "pick_place",
        "seed": 0,
        "policy": "model:runs/student",
        "backend": "fake",
        "outcome": "budget_exhausted",
        "out_dir": str(folder),
    }
    (folder / RECORD_FILE).write_text(json.dumps({"identity": old, "record": rec}))
    assert finished(absolute) is not None and finished(rel) is not None
    other = _job(tmp_path, 0, "model:runs/other")
    assert finished(other) is None
