"""RE-0 testbed with known ground truth (issue 14 item 8, reduced): real counterfactual rollouts.

One audited event: the testbed student (``scripted-faulty:place_offset=1,skip_verify=RATE,
offset_m=0.12``: the merged expert's seeded fault injection, its first placement 12 cm off the
plate and each verification skipped at RATE) fails on a train seed (the first failing one from
``--seed`` on); the rule-based diagnostic locates the boundary (the placement); from that decision
point, in MuJoCo's stochastic mode, three teachers are measured with ``--pairs`` shared draws each
(teacher segment -> student vs student resample -> student; the resample redraws the student's
remaining fault opportunities from the draw's sampling seed, so its own verification may catch
the misplacement):

- ``takeover``: the clean expert taking over mid-episode (a real repair, Delta > 0);
- ``takeover-faulty`` (:data:`~captain_ros.research.re0.seats.HARMFUL_FAULTS`): the same takeover
  placing 12 cm off and skipping its check (the harmful control, Delta <= 0 expected);
- ``self``: the student itself (Delta = 0 exactly when pairing works: same state, same draw).

Each teacher writes at most ``--segment`` requests (the takeover needs its setup request).

The mean paired difference over all pairs is the event's "true" Delta (with a Wilson-free normal
interval). Then the verifier (betting and Hoeffding, 8..48 escalation, alpha = 0.05 for a single
event) is run ``--repeats`` times per teacher on pairs resampled from that pool, which gives the
admission rate (power for ``clean``, false admissions for ``harmful``/``self``) and the rollouts
per admitted event. The pool is measured, the repetitions resample it: the statistic is exact for
the pool, the pool is a finite estimate of the event.

Usage: ``python benchmarks/bench_re0_testbed.py [--seed 3] [--rate 0.5] [--pairs 40] [--repeats 300]
[--segment 8] [--workers 2] [--json OUT]``
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
from captain_ros.research.re0.contracts import RepairContract, scope_cost
from captain_ros.research.re0.locate import locate
from captain_ros.research.re0.loop import API
from captain_ros.research.re0.rollouts import EventSpec, PairedRunner
from captain_ros.research.re0.verify import PairedDraw, VerifierConfig, verify


def resampled_verdicts(
    diffs: list[float], method: str, repeats: int, rng: np.random.Generator
) -> dict[str, Any]:
    cfg = VerifierConfig(method=method, return_bound=1.0)
    admitted, spent = 0, []
    for _ in range(repeats):

        def sample(first: int, n: int) -> list[PairedDraw]:
            idx = rng.integers(len(diffs), size=n)
            return [
                PairedDraw("c", first + i, max(diffs[j], 0.0), max(-diffs[j], 0.0))
                for i, j in enumerate(idx)
            ]

        v = verify(sample, 0.05, cfg)
        admitted += v.admitted
        if v.admitted:
            spent.append(v.rollouts_spent)
    p = wilson_interval(admitted, repeats)
    return {
        "admitted": admitted,
        "repeats": repeats,
        "rate": p.rate,
        "low": p.low,
        "high": p.high,
        "rollouts_per_admission": statistics.mean(spent) if spent else None,
    }


def find_event(task: str, first: int, tries: int, student: str, out: Path) -> tuple[int, Path, Any]:
    """The recorded failure: the first train seed from ``first`` on where ``student`` fails and the
    diagnostic locates a boundary (its episode folder is ``out/student_SEED``)."""
    from captain_ros.research.re0.decision_points import RecordedEpisode
    from captain_ros.tasks import get_task

    for seed in range(first, min(first + tries, 1000)):
        src = out / f"student_{seed:03d}"
        rec = run_local(
            [EpisodeJob(task, seed, student, "mujoco", str(src), {})],
            1,
            "captain_ros.research.re0.rollouts:student_job",
        )[0]
        if rec.outcome == "error":
            raise SystemExit(f"the student's episode crashed: {rec.error[-400:]}")
        loc = locate(RecordedEpisode.load(src), get_task(task).milestone_names)
        if not rec.strict_success and loc.boundary_t is not None:
            return seed, src, loc
        print(f"seed {seed}: no event ({rec.outcome}, {loc.reason})")
    raise SystemExit(f"no event on seeds {first}..{first + tries - 1}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seed", type=int, default=3, help="a train seed (0-999)")
    ap.add_argument("--rate", type=float, default=0.5)
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--segment", type=int, default=8, help="contract length in requests")
    ap.add_argument(
        "--tries", type=int, default=10, help="train seeds tried from --seed for a failure"
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="/tmp/re0_testbed")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if not 0 <= a.seed < 1000:
        raise SystemExit("bench_re0_testbed: develop on train seeds 0-999 only")
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    student = f"scripted-faulty:place_offset=1,skip_verify={a.rate:g},offset_m=0.12"
    seed, src, loc = find_event(a.task, a.seed, a.tries, student, out)
    contract = RepairContract(loc.boundary_t, API, a.segment, scope_cost(a.segment, len(API)))
    report: dict[str, Any] = {
        "task": a.task,
        "seed": seed,
        "segment": a.segment,
        "student": student,
        "boundary_t": loc.boundary_t,
        "evidence": [e.to_dict() for e in loc.evidence],
        "teachers": {},
    }
    rng = np.random.default_rng(0)
    for teacher, pairs in (
        ("self", max(4, a.pairs // 4)),
        ("takeover", a.pairs),
        ("takeover-faulty", a.pairs),
    ):
        spec = EventSpec(
            f"testbed-{teacher}",
            str(src),
            contract.to_dict(),
            student,
            teacher,
            str(out / "rollouts"),
            "mujoco",
            {},
            "success",
        )
        runner = PairedRunner(spec, workers=a.workers)
        t0 = time.perf_counter()
        draws = runner(0, pairs)
        wall = time.perf_counter() - t0
        diffs = [d.difference for d in draws]
        mean = statistics.mean(diffs)
        sd = statistics.pstdev(diffs)
        half = 1.96 * sd / math.sqrt(len(diffs))
        row: dict[str, Any] = {
            "pairs": len(diffs),
            "rollouts": 2 * len(diffs),
            "wall_s": wall,
            "delta": mean,
            "delta_ci95": [mean - half, mean + half],
            "teacher_success": statistics.mean(d.teacher_return for d in draws),
            "student_success": statistics.mean(d.student_return for d in draws),
            "exactly_equal_pairs": sum(d.difference == 0 for d in draws),
        }
        for method in ("betting", "hoeffding"):
            row[method] = resampled_verdicts(diffs, method, a.repeats, rng)
        report["teachers"][teacher] = row
        print(
            f"{teacher:15s} Delta {mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}] over {len(diffs)} pairs "
            f"({wall:.0f} s); admitted: betting {row['betting']['rate']:.3f}, hoeffding {row['hoeffding']['rate']:.3f}"
        )
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
