"""Scripted-expert episodes per hour on this machine, and where a request's time goes.

Runs N scripted-expert episodes in this process (MuJoCo backend, the full harness: sandboxed
session, context renderer, gate, trajectory log; no bag, no report) and prints:

- episodes per hour (one process; ``captain eval --workers N`` scales with free cores),
- per request: policy time (the expert writing its cell), session/harness time (sandbox round
  trips, rendering, bookkeeping) and backend time (motion + perception calls: simulation,
  rendering, IK), as medians and totals,
- CPU seconds per episode (comparable across loaded/unloaded machines).

Usage: ``.venv/bin/python benchmarks/bench_episodes.py [--tasks pick_place,restack] [--seeds 1000-1002]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")


def main() -> None:
    from captain_ros.core.episode_folder import EpisodeFiles
    from captain_ros.evaluation.config import EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.episode import run_one
    from captain_ros.evaluation.runner import parse_seeds

    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="pick_place,restack")
    ap.add_argument("--seeds", default="1000-1002")
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args()
    tasks = ns.tasks.split(",")
    seeds = parse_seeds(ns.seeds)
    rows = []
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            for seed in seeds:
                t, c = time.perf_counter(), time.process_time()
                s = run_one(
                    EpisodeConfig(
                        task,
                        seed,
                        f"{tmp}/{task}_{seed}",
                        recording=RecordingConfig(bag=False, report=False),
                    )
                )
                reqs = EpisodeFiles(Path(f"{tmp}/{task}_{seed}")).read_trajectory_split().requests
                rows.append(
                    {
                        "task": task,
                        "seed": seed,
                        "outcome": s.outcome,
                        "requests": s.requests,
                        "wall_s": time.perf_counter() - t,
                        "cpu_s": time.process_time() - c,
                        "policy_s": [r["model_s"] for r in reqs],
                        "backend_s": [r["backend_s"] for r in reqs],
                        "session_s": [r["harness_s"] for r in reqs],
                    }
                )
                print(
                    f"{task:<12} seed {seed}: {s.outcome:<20} {s.requests:>2} requests "
                    f"{rows[-1]['wall_s']:6.1f} s wall",
                    flush=True,
                )
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    n = len(rows)
    allr = {k: [v for r in rows for v in r[k]] for k in ("policy_s", "backend_s", "session_s")}
    total = {k: sum(v) for k, v in allr.items()}
    nreq = len(allr["policy_s"])
    out = {
        "episodes": n,
        "requests": nreq,
        "wall_s": wall,
        "cpu_s_main_process": cpu,
        "episodes_per_hour": 3600 * n / wall,
        "per_request_median_ms": {k: 1000 * statistics.median(v) for k, v in allr.items()},
        "per_request_mean_ms": {k: 1000 * total[k] / nreq for k in allr},
        "share_of_request_time": {k: total[k] / max(1e-9, sum(total.values())) for k in allr},
        "load_average": os.getloadavg(),
    }
    if ns.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"\n{n} episodes, {nreq} requests in {wall:.0f} s: {out['episodes_per_hour']:.0f} "
        f"scripted episodes per hour (one process; load average {out['load_average'][0]:.1f})"
    )
    print(f"{'per request':<14}{'median ms':>10}{'mean ms':>10}{'share':>8}")
    for k, label in (("policy_s", "policy"), ("session_s", "session"), ("backend_s", "backend")):
        print(
            f"{label:<14}{out['per_request_median_ms'][k]:10.1f}{out['per_request_mean_ms'][k]:10.1f}"
            f"{100 * out['share_of_request_time'][k]:7.1f}%"
        )


if __name__ == "__main__":
    main()
