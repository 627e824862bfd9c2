"""RE-0 counterfactual rollouts per hour against plain episodes per hour, in the same run.

1. Plain episodes: the testbed student (``scripted-faulty:place_offset=1,skip_verify=1,
   offset_m=0.12``: the merged expert's seeded faults, its placement 12 cm off, not verified) on ``--seeds`` train seeds in MuJoCo's stochastic mode, through the
   evaluation runner's spawned workers (:func:`captain_ros.research.re0.rollouts.student_job`).
2. The first failed one is located (rule-based) and one audited event is verified for ``--draws``
   shared draws: teacher segment -> student vs student resample -> student, both from the restored
   decision point, through the same runner and worker count (:class:`PairedRunner`); the teacher is
   the clean expert's mid-episode takeover within an 8-request contract.
3. Beside them, the physical limits measured in the same run: raw ``mj_step`` rate of the scene,
   backend snapshot restore, sandbox start, and the per-rollout decision-point restore (robot side
   + the session rehydrated by replaying the prefix cells).

Goal (issue 14): counterfactual rollouts per hour >= 0.8 x plain episodes per hour.

Usage: ``python benchmarks/bench_re0_rollouts.py [--task pick_place] [--seeds 0-3] [--draws 4]
[--workers 2] [--out /tmp/re0_bench] [--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from captain_ros.evaluation.runner import EpisodeJob, parse_seeds, run_local
from captain_ros.research.re0.contracts import RepairContract, scope_cost
from captain_ros.research.re0.locate import locate
from captain_ros.research.re0.loop import API
from captain_ros.research.re0.rollouts import EventSpec, PairedRunner

STUDENT = "scripted-faulty:place_offset=1,skip_verify=1,offset_m=0.12"
SEGMENT = 8
"""The takeover's contract: setup, taking stock, a fresh look, placement, check, finish."""


def physical_limits(task_name: str, seed: int) -> dict[str, float]:
    """Raw mj_step rate, snapshot restore and sandbox start on this machine, now."""
    import mujoco

    from captain_ros.backends.mujoco import MujocoBackend
    from captain_ros.harness.sandbox.session import PythonSession
    from captain_ros.tasks import get_task

    b = MujocoBackend(get_task(task_name).sample(seed))
    t0 = time.perf_counter()
    for _ in range(5000):
        mujoco.mj_step(b.model, b.data)
    steps = 5000 / (time.perf_counter() - t0)
    snap = b.snapshot()
    t0 = time.perf_counter()
    for _ in range(1000):
        b.restore(snap)
    restore_us = (time.perf_counter() - t0) * 1e3
    b.close()
    work = Path("/tmp/re0_bench_session")
    t0 = time.perf_counter()
    with PythonSession(work) as s:
        s.start()
    start_ms = (time.perf_counter() - t0) * 1e3
    shutil.rmtree(work, ignore_errors=True)
    return {"mj_step_per_s": steps, "backend_restore_us": restore_us, "sandbox_start_ms": start_ms}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seeds", default="0-3", help="train seeds (0-999) of the plain episodes")
    ap.add_argument("--draws", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="/tmp/re0_bench")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    seeds = parse_seeds(a.seeds)
    if max(seeds) >= 1000:
        raise SystemExit("bench_re0_rollouts: develop on train seeds 0-999 only")
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    limits = physical_limits(a.task, seeds[0])
    jobs = [
        EpisodeJob(
            a.task,
            s,
            STUDENT,
            "mujoco",
            str(out / "plain" / f"seed_{s:03d}"),
            {"noise": {"spec": {}, "seed": 1000 + s}},
        )
        for s in seeds
    ]
    t0 = time.perf_counter()
    plain = run_local(jobs, a.workers, "captain_ros.research.re0.rollouts:student_job")
    plain_s = time.perf_counter() - t0
    failed = [r for r in plain if r.outcome not in ("success_with_finish", "error")]
    errors = [r for r in plain if r.outcome == "error"]
    if errors:
        raise SystemExit(f"bench_re0_rollouts: a plain episode crashed: {errors[0].error[-400:]}")
    if not failed:
        raise SystemExit("bench_re0_rollouts: every plain episode succeeded; no event to audit")
    from captain_ros.research.re0.decision_points import RecordedEpisode
    from captain_ros.tasks import get_task

    src = failed[0].out_dir
    loc = locate(RecordedEpisode.load(src), get_task(a.task).milestone_names)
    if loc.boundary_t is None:
        raise SystemExit(f"bench_re0_rollouts: the diagnostic abstained: {loc.reason}")
    contract = RepairContract(loc.boundary_t, API, SEGMENT, scope_cost(SEGMENT, len(API)))
    spec = EventSpec(
        "bench",
        src,
        contract.to_dict(),
        STUDENT,
        "takeover",
        str(out / "rollouts"),
        "mujoco",
        {},
        "success",
    )
    runner = PairedRunner(spec, workers=a.workers)
    t0 = time.perf_counter()
    draws = runner(0, a.draws)
    cf_s = time.perf_counter() - t0
    rollouts = len(runner.records)
    restore = [r.extra["rollout"]["restore_s"] for r in runner.records]
    report: dict[str, Any] = {
        "task": a.task,
        "seeds": seeds,
        "workers": a.workers,
        "draws": a.draws,
        **limits,
        "plain": {
            "episodes": len(plain),
            "wall_s": plain_s,
            "per_hour": 3600 * len(plain) / plain_s,
            "requests_mean": statistics.mean(r.requests for r in plain),
            "failed": len(failed),
        },
        "counterfactual": {
            "rollouts": rollouts,
            "wall_s": cf_s,
            "per_hour": 3600 * rollouts / cf_s,
            "continuation_requests_mean": statistics.mean(
                r.requests - spec.t + 1 for r in runner.records
            ),
            "restore_s_mean": statistics.mean(restore),
            "boundary_t": loc.boundary_t,
            "delta_hat": statistics.mean(d.difference for d in draws),
        },
    }
    report["ratio"] = report["counterfactual"]["per_hour"] / report["plain"]["per_hour"]
    report["requests_ratio"] = (
        report["counterfactual"]["per_hour"]
        * report["counterfactual"]["continuation_requests_mean"]
        / (report["plain"]["per_hour"] * report["plain"]["requests_mean"])
    )
    p, c = report["plain"], report["counterfactual"]
    print(
        f"physical limits: mj_step {limits['mj_step_per_s']:,.0f}/s, restore {limits['backend_restore_us']:.1f} us, "
        f"sandbox start {limits['sandbox_start_ms']:.0f} ms"
    )
    print(
        f"plain episodes: {p['episodes']} in {p['wall_s']:.1f} s = {p['per_hour']:.0f}/h "
        f"({p['requests_mean']:.1f} requests, {p['failed']} failed)"
    )
    print(
        f"counterfactual rollouts: {c['rollouts']} in {c['wall_s']:.1f} s = {c['per_hour']:.0f}/h "
        f"(boundary t={c['boundary_t']}, {c['continuation_requests_mean']:.1f} requests per continuation, "
        f"decision-point restore {c['restore_s_mean']:.2f} s, Delta-hat {c['delta_hat']:+.2f})"
    )
    print(
        f"ratio counterfactual/plain: {report['ratio']:.2f} (goal >= 0.8); per policy request executed: "
        f"{report['requests_ratio']:.2f}"
    )
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
