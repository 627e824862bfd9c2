"""RE-0 testbed ground truth (issue 14 item 8): one event's true Delta from >= 1,000 shared draws.

``bench_re0_testbed.py`` measures each teacher with its own 40 draws. Here every teacher of one
event shares one event id, so draw xi gives every arm the same noise draw and the same policy
sampling seed; the student arm (student resample -> student continuation) of draw xi is then the
same rollout for every teacher and runs once. One pass of ``--draws`` draws costs
``draws x (1 + teachers)`` rollouts, and each teacher's Delta rests on ``2 x draws`` rollouts
(its own arm and the shared student arm). ``self`` (the student writing its own segment) runs on
the first draws (``self@20``) as the pairing check: its arm must equal the student arm exactly.

The run is resumable: every finished rollout is one line of ``OUT/rollouts.jsonl`` (draw, arm,
value, outcome, restore seconds, the faults a faulty takeover made in its segment), written as it
lands, and a rerun with the same ``--out`` skips what is there; ``--hours`` stops between chunks.
The rollout folders of draws past ``--keep`` are deleted once read. ``--analyse`` only reads the ledger back and writes ``OUT/report.json``:

- per teacher: Delta with a normal 95 % interval, both arms' success rates, exactly-equal pairs;
- the verifier (betting and Hoeffding, the 8..48 escalation, alpha = 0.05 for one event) on
  **disjoint blocks of the measured draws in their order** (no resampling: each block is a fresh
  run of the verifier on real pairs; Wilson intervals over blocks), and on ``--repeats`` pools
  resampled from all pairs (``bench_re0_testbed.resampled_verdicts``);
- a teacher whose true Delta <= 0 counts its admissions as false admissions (must be <= alpha);
- the hardest null, Delta = 0 exactly with the spread of a measured pool: the verifier on pools
  resampled from each teacher's differences together with their negations (``--null-repeats``
  runs; the symmetrized pool is a construction from measured pairs, not a measured teacher).

Usage: ``python benchmarks/experiments/exp_re0_ground_truth.py --out DIR [--seed 3] [--rate 0.5] [--draws 1000]
[--student SPEC] [--teachers 'takeover;takeover-faulty;self@20'] [--workers 2] [--hours H] [--analyse]``
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: bench_re0_testbed

from bench_re0_testbed import find_event, resampled_verdicts  # noqa: E402

from captain_ros.evaluation.runner import EpisodeJob, run_local  # noqa: E402
from captain_ros.evaluation.stats import wilson_interval  # noqa: E402
from captain_ros.harness.record.episode_record import EpisodeRecord  # noqa: E402
from captain_ros.research.re0.contracts import RepairContract, scope_cost  # noqa: E402
from captain_ros.research.re0.loop import API  # noqa: E402
from captain_ros.research.re0.rollouts import JOB_PATH, EventSpec  # noqa: E402
from captain_ros.research.re0.verify import PairedDraw, VerifierConfig, verify  # noqa: E402

STUDENT_ARM = "student"
CHUNK_DRAWS = 25


def event_of(a: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The audited event (found once, then read back from ``OUT/event.json``)."""
    path = out / "event.json"
    if path.exists():
        return json.loads(path.read_text())
    student = a.student or f"scripted-faulty:place_offset=1,skip_verify={a.rate:g},offset_m=0.12"
    seed, src, loc = find_event(a.task, a.seed, a.tries, student, out / "source")
    contract = RepairContract(loc.boundary_t, API, a.segment, scope_cost(a.segment, len(API)))
    event = {
        "event_id": f"gt-{a.task}-s{seed:03d}-t{loc.boundary_t}",
        "task": a.task,
        "seed": seed,
        "source": str(src),
        "student": student,
        "contract": contract.to_dict(),
        "evidence": [e.to_dict() for e in loc.evidence],
    }
    path.write_text(json.dumps(event, indent=2) + "\n")
    return event


def spec_for(event: dict[str, Any], teacher: str, out: Path) -> EventSpec:
    return EventSpec(
        event["event_id"],
        event["source"],
        event["contract"],
        event["student"],
        teacher,
        str(out / "rollouts"),
        "mujoco",
        {},
        "success",
    )


def parse_teachers(text: str, draws: int) -> dict[str, int]:
    """``SPEC[@N];...`` -> {spec: draws it runs on} (``@N``: only the first N draws)."""
    out: dict[str, int] = {}
    for item in (t.strip() for t in text.split(";")):
        if not item:
            continue
        spec, _, n = item.partition("@")
        try:
            out[spec] = min(int(n), draws) if n else draws
        except ValueError:
            raise SystemExit(
                f"exp_re0_ground_truth: bad teacher entry {item!r} (SPEC[@N])"
            ) from None
    return out


def planned(draws: int, teachers: dict[str, int]) -> list[tuple[int, str]]:
    """(draw, arm) in draw-major order: any stopping point leaves the arms at equal counts."""
    rows = []
    for xi in range(draws):
        rows.append((xi, STUDENT_ARM))
        rows += [(xi, t) for t, n in teachers.items() if xi < n]
    return rows


def job_of(event: dict[str, Any], xi: int, arm: str, out: Path) -> EpisodeJob:
    teacher = "self" if arm == STUDENT_ARM else arm
    spec = spec_for(event, teacher, out)
    role = "student" if arm == STUDENT_ARM else "teacher"
    tag = arm.replace(":", "_").replace(",", "_").replace("=", "")
    return EpisodeJob(
        event["task"],
        event["seed"],
        f"teacher:{teacher}" if role == "teacher" else event["student"],
        "mujoco",
        str(out / "rollouts" / f"xi{xi:04d}_{tag}"),
        {"rollout": {"event": asdict(spec), "arm": role, "xi": xi}},
    )


def read_ledger(out: Path) -> list[dict[str, Any]]:
    path = out / "rollouts.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def collect(
    a: argparse.Namespace, out: Path, event: dict[str, Any], teachers: dict[str, int]
) -> None:
    done = {(r["xi"], r["arm"]) for r in read_ledger(out)}
    todo = [row for row in planned(a.draws, teachers) if row not in done]
    deadline = time.monotonic() + a.hours * 3600 if a.hours > 0 else math.inf
    print(f"{len(done)} rollouts in the ledger, {len(todo)} to run", flush=True)
    ledger = (out / "rollouts.jsonl").open("a")
    t_start, n_run = time.perf_counter(), 0
    try:
        while todo and time.monotonic() < deadline:
            first = todo[0][0]
            chunk = [row for row in todo if row[0] < first + CHUNK_DRAWS]
            todo = todo[len(chunk) :]
            jobs = [job_of(event, xi, arm, out) for xi, arm in chunk]
            arms = {job.out_dir: row for job, row in zip(jobs, chunk, strict=True)}

            def land(rec: EpisodeRecord, arms: dict[str, tuple[int, str]] = arms) -> None:
                xi, arm = arms[rec.out_dir]
                ro = rec.extra.get("rollout") or {}
                row = {
                    "xi": xi,
                    "arm": arm,
                    "value": ro.get("value"),
                    "outcome": rec.outcome,
                    "requests": rec.requests,
                    "wall_s": rec.wall_s,
                    "restore_s": ro.get("restore_s"),
                    "teacher_faults": [f["fault"] for f in ro.get("teacher_faults") or []],
                    "error": (rec.error or "")[-300:] if rec.outcome == "error" else "",
                }
                ledger.write(json.dumps(row) + "\n")
                ledger.flush()
                if xi >= a.keep:
                    shutil.rmtree(rec.out_dir, ignore_errors=True)

            run_local(jobs, a.workers, JOB_PATH, on_result=land)
            n_run += len(chunk)
            rate = n_run / (time.perf_counter() - t_start) * 3600
            print(
                f"draws < {first + CHUNK_DRAWS}: {n_run} rollouts this run, {rate:.0f}/h",
                flush=True,
            )
    finally:
        ledger.close()
    rate = n_run / max(time.perf_counter() - t_start, 1e-9) * 3600
    (out / f"collect_{int(time.time())}.json").write_text(
        json.dumps({"rollouts": n_run, "wall_s": time.perf_counter() - t_start, "per_hour": rate})
        + "\n"
    )


def block_verdicts(diffs: list[float], method: str) -> dict[str, Any]:
    """The verifier run on consecutive disjoint blocks of the measured pairs (no resampling)."""
    cfg = VerifierConfig(method=method, return_bound=1.0)
    pos, admitted, runs, spent = 0, 0, 0, []
    while True:
        base = pos

        def sample(first: int, n: int, base: int = base) -> list[PairedDraw]:
            if base + first + n > len(diffs):
                raise IndexError("pool exhausted")
            return [
                PairedDraw("c", first + i, max(d, 0.0), max(-d, 0.0))
                for i, d in enumerate(diffs[base + first : base + first + n])
            ]

        try:
            v = verify(sample, 0.05, cfg)
        except IndexError:
            break
        runs += 1
        admitted += v.admitted
        pos += len(v.draws)
        if v.admitted:
            spent.append(v.rollouts_spent)
    p = wilson_interval(admitted, runs) if runs else None
    return {
        "admitted": admitted,
        "runs": runs,
        "pairs_used": pos,
        "rate": p.rate if p else None,
        "low": p.low if p else None,
        "high": p.high if p else None,
        "rollouts_per_admission": statistics.mean(spent) if spent else None,
    }


def analyse(a: argparse.Namespace, out: Path, event: dict[str, Any]) -> dict[str, Any]:
    rows = read_ledger(out)
    errors = [r for r in rows if r["outcome"] == "error"]
    by: dict[str, dict[int, float]] = {}
    struck: dict[str, int] = {}  # arm -> draws in which its segment made a seeded mistake
    for r in rows:
        if r["outcome"] != "error" and r["value"] is not None:
            by.setdefault(r["arm"], {})[r["xi"]] = float(r["value"])
            if "teacher_faults" in r:  # ledgers written before the field have no count
                struck[r["arm"]] = struck.get(r["arm"], 0) + bool(r["teacher_faults"])
    base = by.get(STUDENT_ARM, {})
    rng = np.random.default_rng(0)
    report: dict[str, Any] = {
        **{k: event[k] for k in ("event_id", "task", "seed", "student", "evidence")},
        "boundary_t": event["contract"]["boundary_t"],
        "rollouts": len(rows),
        "errors": len(errors),
        "error_examples": [e["error"] for e in errors[:3]],
        "student_arm_success": statistics.mean(base.values()) if base else None,
        "restore_s_median": statistics.median(r["restore_s"] for r in rows if r.get("restore_s"))
        if rows
        else None,
        "teachers": {},
    }
    for arm, vals in by.items():
        if arm == STUDENT_ARM:
            continue
        xs = sorted(set(vals) & set(base))
        diffs = [vals[x] - base[x] for x in xs]
        if len(diffs) < 2:
            continue
        mean, sd = statistics.mean(diffs), statistics.pstdev(diffs)
        half = 1.96 * sd / math.sqrt(len(diffs))
        row: dict[str, Any] = {
            "pairs": len(diffs),
            "rollouts": 2 * len(diffs),
            "delta": mean,
            "delta_ci95": [mean - half, mean + half],
            "teacher_success": statistics.mean(vals[x] for x in xs),
            "student_success": statistics.mean(base[x] for x in xs),
            "exactly_equal_pairs": sum(d == 0 for d in diffs),
            "draws_with_teacher_faults": struck.get(arm),
            "null": mean <= 0,
        }
        sym = diffs + [-d for d in diffs]  # this pool's spread, mean 0 by construction
        for method in ("betting", "hoeffding"):
            row[f"{method}_blocks"] = block_verdicts(diffs, method)
            row[f"{method}_resampled"] = resampled_verdicts(diffs, method, a.repeats, rng)
            if any(sym):
                row[f"{method}_null_symmetrized"] = resampled_verdicts(
                    sym, method, a.null_repeats, rng
                )
        report["teachers"][arm] = row
        print(
            f"{arm:40s} Delta {mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}] over {len(diffs)} pairs; "
            f"blocks admitted: betting {row['betting_blocks']['admitted']}/{row['betting_blocks']['runs']}, "
            f"hoeffding {row['hoeffding_blocks']['admitted']}/{row['hoeffding_blocks']['runs']}"
        )
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="the run folder (resumed when it exists)")
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seed", type=int, default=3, help="a train seed (0-999)")
    ap.add_argument("--tries", type=int, default=10, help="train seeds tried for a failure")
    ap.add_argument("--rate", type=float, default=0.5, help="the student's skip_verify rate")
    ap.add_argument(
        "--student",
        default="",
        help="the student's policy spec (default: the testbed's scripted-faulty with place_offset=1, "
        "skip_verify=RATE, offset_m=0.12); read from OUT/event.json on a resume",
    )
    ap.add_argument("--segment", type=int, default=8, help="contract length in requests")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument(
        "--teachers",
        default="takeover;takeover-faulty;self@20",
        help="SPEC[@N] separated by ';' (a takeover-faulty:FAULTS spec has commas; @N: only the "
        "first N draws; self: the pairing check)",
    )
    ap.add_argument("--keep", type=int, default=10, help="rollout folders kept (first draws)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--hours", type=float, default=0.0, help="stop between chunks after this")
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument(
        "--null-repeats", type=int, default=2000, help="verifier runs on each symmetrized pool"
    )
    ap.add_argument("--analyse", action="store_true", help="only read the ledger back")
    a = ap.parse_args()
    if not 0 <= a.seed < 1000:
        raise SystemExit("exp_re0_ground_truth: develop on train seeds 0-999 only")
    teachers = parse_teachers(a.teachers, a.draws)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    event = event_of(a, out)
    if not a.analyse:
        collect(a, out, event, teachers)
    analyse(a, out, event)


if __name__ == "__main__":
    main()
