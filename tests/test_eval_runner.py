"""Evaluation runner: seeds, spawned workers, crash isolation, eval.json/PNG, paired comparison, Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, RecordingConfig
from captain_ros.evaluation.runner import (
    EpisodeJob,
    evaluate,
    make_jobs,
    oversubscription,
    parse_seeds,
    resolve,
    run_local,
    worker_environment,
)
from captain_ros.evaluation.summary import aggregate, compare, load_episodes
from captain_ros.harness.record.episode_record import EpisodeRecord

JOB = "test_eval_runner:fake_job"
FAKE = EpisodeConfig(backend=BackendConfig("fake"), recording=RecordingConfig(report=False))


def fake_job(job: dict) -> dict:
    """A stand-in episode: deterministic outcome from the seed; seed 13 crashes the worker code."""
    seed = job["seed"]
    if seed == 13:
        raise RuntimeError("simulated crash in episode")
    host = seed % 4 != 0
    finished = seed % 5 != 0
    return EpisodeRecord(
        task=job["task"],
        seed=seed,
        policy=job["policy"],
        backend=job["backend"],
        outcome=(
            "success_with_finish"
            if host and finished
            else "missed_finish"
            if host
            else "false_finish"
            if finished
            else "other_failure"
        ),
        host_success=host,
        strict_success=host and finished,
        finished=finished,
        requests=10 + seed % 3,
        physical_actions=20,
        wall_s=1.0,
        model_s=0.2,
        harness_s=0.2,
        backend_s=0.6,
        out_dir=job["out_dir"],
        extra={"pid": os.getpid()},
    ).to_dict()


def test_oversubscribed_openmp_threads_are_named():
    msg = oversubscription(2, {"OMP_NUM_THREADS": "2"}, cores=2)
    assert msg == (
        "warning: OMP_NUM_THREADS=2 with 2 workers is 4 threads on 2 cores; unset it "
        "(workers default to 1 thread each) or lower it"
    )
    assert oversubscription(2, {}, cores=2) is None  # worker_environment's 1 thread
    assert oversubscription(2, {"OMP_NUM_THREADS": "1"}, cores=2) is None
    assert oversubscription(1, {"OMP_NUM_THREADS": "8"}, cores=2) is None  # in-process
    assert oversubscription(4, {"OMP_NUM_THREADS": "2"}, cores=8) is None
    assert oversubscription(2, {"OMP_NUM_THREADS": "lots"}, cores=2) is None


def test_run_local_warns_before_it_starts_workers(monkeypatch, capsys):
    monkeypatch.setenv("OMP_NUM_THREADS", str(os.cpu_count() or 1))
    assert run_local([], workers=2) == []
    assert "warning: OMP_NUM_THREADS=" in capsys.readouterr().err


def test_parse_seeds():
    assert parse_seeds("1000-1003") == [1000, 1001, 1002, 1003]
    assert parse_seeds("3,5, 9") == [3, 5, 9]
    assert parse_seeds("1-3,2,7") == [1, 2, 3, 7]
    for bad in ("", "5-3", "-1"):
        with pytest.raises(ValueError):
            parse_seeds(bad)


def test_spawned_workers_run_jobs_and_isolate_crashes(tmp_path):
    jobs = make_jobs(["pick_place"], range(10, 16), tmp_path, FAKE)
    assert jobs[0].out_dir.endswith("pick_place/seed_00010")
    seen = []
    eps = run_local(jobs, workers=2, job_path=JOB, on_result=seen.append)
    assert [e.seed for e in eps] == list(range(10, 16)) and len(seen) == 6
    crashed = eps[3]
    assert crashed.outcome == "error" and "simulated crash" in crashed.error
    assert not crashed.host_success
    pids = {e.extra["pid"] for e in eps if e.outcome != "error"}
    assert os.getpid() not in pids  # ran in worker processes


def test_evaluate_writes_json_and_png_with_figures(tmp_path):
    jobs = make_jobs(["stack", "pick_place"], range(0, 20), tmp_path / "eps", FAKE)
    report = evaluate(jobs, tmp_path / "ev", workers=1, job_path=JOB)
    data = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert data["overall"]["episodes"] == 40
    # seeds 0..19: host fails on multiples of 4 (5 of 20), seed 13 errors (1 more)
    pp = data["per_task"]["pick_place"]
    assert pp["host_success"]["successes"] == 14
    assert pp["host_success"]["ci_low"] < 0.7 < pp["host_success"]["ci_high"]
    assert pp["outcomes"]["error"] == 1
    assert report["per_task"]["stack"] == pp
    assert (tmp_path / "ev" / "eval.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    loaded = load_episodes(tmp_path / "ev")
    assert len(loaded) == 40 and loaded[0].extra["pid"] == os.getpid()


def test_aggregate_counts_false_finishes_and_overhead():
    eps = [
        EpisodeRecord.from_dict(
            fake_job({"task": "t", "seed": s, "policy": "p", "backend": "fake", "out_dir": ""})
        )
        for s in (0, 1, 2, 3, 4, 5)
    ]
    agg = aggregate(eps)
    # seed 0: host False finished False; seed 4: host False, finished True -> false finish
    assert agg["false_finish"]["successes"] == 1
    assert agg["strict_success"]["successes"] == 3  # seeds 1, 2, 3
    assert agg["requests_per_episode"]["mean"] == pytest.approx(
        sum(10 + s % 3 for s in range(6)) / 6
    )
    assert agg["harness_overhead_per_request_s"]["median"] == pytest.approx(0.2 / 11, rel=0.2)


def test_paired_comparison_of_two_runs(tmp_path):
    a = [
        EpisodeRecord("t", s, "a", "fake", "success_with_finish", True, True, True)
        for s in range(10)
    ]
    b = [
        EpisodeRecord(
            "t",
            s,
            "b",
            "fake",
            "other_failure" if s < 7 else "success_with_finish",
            s >= 7,
            s >= 7,
            s >= 7,
        )
        for s in range(12)
    ]
    cmp = compare(a, b)
    assert cmp["paired"] == 10 and cmp["only_in_b"] == 2
    assert cmp["mcnemar"]["only_a"] == 7 and cmp["mcnemar"]["only_b"] == 0
    assert cmp["mcnemar"]["p_value"] == pytest.approx(2 / 2**7)


def test_summary_rejects_unknown_outcome():
    with pytest.raises(ValueError):
        EpisodeRecord("t", 0, "p", "b", "great", True, True)


@pytest.mark.slow
def test_local_ray_cluster_runs_jobs(tmp_path):
    ray = pytest.importorskip("ray")
    from captain_ros.evaluation.runner import run_ray

    jobs = [
        EpisodeJob("pick_place", s, "scripted", "fake", str(tmp_path / str(s))) for s in (1, 2, 13)
    ]
    try:
        eps = run_ray(jobs, "local", job_path="captain_ros.evaluation.selftest:echo_job")
    finally:
        ray.shutdown()
    assert [e.seed for e in eps] == [1, 2, 13]
    assert eps[0].outcome == "success_with_finish" and eps[0].extra["ran_on"] == "ray"


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_workers_exit_when_the_parent_is_killed(tmp_path):
    """A benchmark killed mid-chunk must not leave its workers running their jobs."""
    script = Path(__file__).with_name("eval_orphan_parent.py")
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path)])
    workers: list[int] = []
    try:
        pid_files = [tmp_path / "pick_place" / f"seed_{s:05d}.pid" for s in (1, 2)]
        deadline = time.monotonic() + 120.0
        while not all(p.exists() and p.read_text() for p in pid_files):
            assert parent.poll() is None and time.monotonic() < deadline, "workers never started"
            time.sleep(0.2)
        workers = [int(p.read_text()) for p in pid_files]
        assert all(_alive(w) for w in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 15.0
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "workers outlived their killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        for w in filter(_alive, workers):  # a failed run must not leave sleepers behind
            os.kill(w, signal.SIGKILL)


WORKER_ENTRY_POINTS = [
    "captain_ros.evaluation.episode:run_job",
    "captain_ros.research.re0.rollouts:rollout_job",
    "captain_ros.research.re0.rollouts:student_job",
    "captain_ros.learn.rl.rollout:run_rollout_job",
]


def test_worker_environment_keeps_what_the_caller_set(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    worker_environment()
    assert os.environ["OMP_NUM_THREADS"] == "1"
    assert os.environ["MUJOCO_GL"] == "osmesa"


@pytest.mark.parametrize("entry", WORKER_ENTRY_POINTS)
def test_every_worker_entry_point_sets_the_worker_environment(entry, monkeypatch):
    """The entry points set it themselves (a Ray task never runs the pool's initializer): an
    empty job fails only after the environment is set."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    with pytest.raises(KeyError):
        resolve(entry)({})
    assert (os.environ.get("OMP_NUM_THREADS"), os.environ.get("MUJOCO_GL")) == ("1", "egl")


def test_every_episode_pool_warns(monkeypatch, capsys, tmp_path):
    """The RL rollout pool and CoEvolve's evaluation start workers too: they warn like run_local."""
    from captain_ros.learn.rl.workers import RolloutPool

    monkeypatch.setenv("OMP_NUM_THREADS", str(os.cpu_count() or 1))
    pool = RolloutPool(2)
    pool.close()
    assert "warning: OMP_NUM_THREADS=" in capsys.readouterr().err
    RolloutPool(1).close()  # inline: nothing to oversubscribe
    assert capsys.readouterr().err == ""
    from captain_ros.core.errors import CaptainError
    from captain_ros.research.coevolve.evaluate import evaluate
    from captain_ros.research.coevolve.records import RunConfig

    with pytest.raises(CaptainError, match="no runs"):  # no seeds: the pool starts, then nothing
        evaluate(RunConfig(), "coevolve", [], "scripted", tmp_path, workers=2)
    assert "warning: OMP_NUM_THREADS=" in capsys.readouterr().err
