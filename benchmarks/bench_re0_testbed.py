"""RE-0 testbed with known ground truth (issue 14 item 8, reduced): real counterfactual rollouts.

One audited event: the testbed student (``re0-faulty:place=RATE``: main's scripted expert with its
placements shifted at RATE) fails on a train seed; the rule-based diagnostic locates the
boundary; from that decision point, in MuJoCo's stochastic mode, three teachers are measured
with ``--pairs`` shared draws each (teacher segment -> student vs student resample -> student):

- ``clean``: the clean expert (a real repair, Delta > 0);
- ``harmful``: the same plan with the placement shifted twice as far (Delta < 0, the control);
- ``self``: the student itself (Delta = 0 exactly when pairing works: same state, same draw).

The mean paired difference over all pairs is the event's "true" Delta (with a Wilson-free normal
interval). Then the verifier (betting and Hoeffding, 8..48 escalation, alpha = 0.05 for a single
event) is run ``--repeats`` times per teacher on pairs resampled from that pool, which gives the
admission rate (power for ``clean``, false admissions for ``harmful``/``self``) and the rollouts
per admitted event. The pool is measured, the repetitions resample it: the statistic is exact for
the pool, the pool is a finite estimate of the event.

Usage: ``python benchmarks/bench_re0_testbed.py [--seed 3] [--rate 0.5] [--pairs 40] [--repeats 300]
[--workers 2] [--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.evaluation.runner import EpisodeJob, run_local
from captain_ros.evaluation.stats import wilson_interval
from captain_ros.learn.re0.contracts import RepairContract, scope_cost
from captain_ros.learn.re0.locate import locate
from captain_ros.learn.re0.rollouts import EventSpec, PairedRunner
from captain_ros.learn.re0.verify import PairedDraw, VerifierConfig, verify


def resampled_verdicts(diffs: list[float], method: str, repeats: int, rng: np.random.Generator) -> dict[str, Any]:
    cfg = VerifierConfig(method=method, return_bound=1.0)
    admitted, spent = 0, []
    for _ in range(repeats):
        def sample(first: int, n: int) -> list[PairedDraw]:
            idx = rng.integers(len(diffs), size=n)
            return [PairedDraw("c", first + i, max(diffs[j], 0.0), max(-diffs[j], 0.0)) for i, j in enumerate(idx)]
        v = verify(sample, 0.05, cfg)
        admitted += v.admitted
        if v.admitted:
            spent.append(v.rollouts_spent)
    p = wilson_interval(admitted, repeats)
    return {"admitted": admitted, "repeats": repeats, "rate": p.rate, "low": p.low, "high": p.high,
            "rollouts_per_admission": statistics.mean(spent) if spent else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seed", type=int, default=3, help="a train seed (0-999)")
    ap.add_argument("--rate", type=float, default=0.5)
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="/tmp/re0_testbed")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if not 0 <= a.seed < 1000:
        raise SystemExit("bench_re0_testbed: develop on train seeds 0-999 only")
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    student = f"re0-faulty:place={a.rate}"
    src = out / "student"
    # the recorded failure: the same student, with the first placement certainly faulted
    rec = run_local([EpisodeJob(a.task, a.seed, "re0-faulty:place=1.0", "mujoco", str(src), {})], 1,
                    "captain_ros.learn.re0.rollouts:student_job")[0]
    from captain_ros.harness.decision_points import RecordedEpisode
    from captain_ros.tasks import get_task

    loc = locate(RecordedEpisode.load(src), get_task(a.task).milestone_names)
    if rec.strict_success or loc.boundary_t is None:
        raise SystemExit(f"bench_re0_testbed: no event on seed {a.seed}: {rec.outcome}, {loc.reason}")
    symbols = (*loc.capabilities, "finish")
    contract = RepairContract(loc.boundary_t, symbols, 1, scope_cost(1, len(symbols)))
    report: dict[str, Any] = {"task": a.task, "seed": a.seed, "student": student, "boundary_t": loc.boundary_t,
                              "evidence": [e.to_dict() for e in loc.evidence], "teachers": {}}
    rng = np.random.default_rng(0)
    for teacher, pairs in (("self", max(4, a.pairs // 4)), ("clean", a.pairs), ("harmful", a.pairs)):
        spec = EventSpec(f"testbed-{teacher}", str(src), contract.to_dict(), student, teacher,
                         str(out / "rollouts"), "mujoco", {}, "success")
        runner = PairedRunner(spec, workers=a.workers)
        t0 = time.perf_counter()
        draws = runner(0, pairs)
        wall = time.perf_counter() - t0
        diffs = [d.difference for d in draws]
        mean = statistics.mean(diffs)
        sd = statistics.pstdev(diffs)
        half = 1.96 * sd / math.sqrt(len(diffs))
        row = {"pairs": len(diffs), "rollouts": 2 * len(diffs), "wall_s": wall, "delta": mean,
               "delta_ci95": [mean - half, mean + half], "teacher_success": statistics.mean(d.teacher_return for d in draws),
               "student_success": statistics.mean(d.student_return for d in draws),
               "exactly_equal_pairs": sum(d.difference == 0 for d in draws)}
        for method in ("betting", "hoeffding"):
            row[method] = resampled_verdicts(diffs, method, a.repeats, rng)
        report["teachers"][teacher] = row
        print(f"{teacher:8s} Delta {mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}] over {len(diffs)} pairs "
              f"({wall:.0f} s); admitted: betting {row['betting']['rate']:.3f}, hoeffding {row['hoeffding']['rate']:.3f}")
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
