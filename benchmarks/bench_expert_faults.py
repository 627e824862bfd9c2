"""The fault-injecting scripted expert as a policy mix: throughput and the spread of outcomes.

Runs the mix (``scripted-faulty``, default: every fault at its default rate) on training seeds of
every task in this one process (MuJoCo, the full harness with the sandboxed session; no bag, no
report), and the clean expert on a few of the same seeds in the same run for comparison. Prints:

- episodes per hour of the mix and of the clean expert (one process; CPU seconds per episode too,
  comparable across loaded and unloaded machines),
- host success per task, mix and clean, with Wilson 95 % intervals,
- per task and phase (the phase of each fault that fired in the episode): episodes, successes,
  failures; an episode with faults of two phases counts in both. The aim: failures and successes
  in every phase of every task.

Usage: ``.venv/bin/python benchmarks/bench_expert_faults.py [--tasks all] [--seeds 0-9]
[--clean-seeds 0-1] [--spec grasp_offset=0.3,...] [--json FILE]``, or ``--tabulate A.json B.json``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

TASKS = ("pick_place", "stack", "restack", "open_drawer", "two_arm_lift", "insertion")


def episode(task_name: str, seed: int, spec: str | None, out: Path) -> dict[str, Any]:
    from captain_ros.evaluation.episode import build_robot
    from captain_ros.harness.episode.loop import run_episode
    from captain_ros.policy.factory import make_policy

    task, backend, service = build_robot(task_name, seed)
    policy = make_policy("scripted" if spec is None else f"scripted-faulty:{spec}".rstrip(":"))
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        hs = run_episode(
            task,
            seed,
            service,
            policy,
            None,
            out / f"{task_name}_{seed}_{spec is None}",
            host_success=lambda: bool(task.success(backend.privileged_state())),
        )
    finally:
        backend.close()
    events = [e.to_dict() for e in getattr(policy, "events", [])]
    return {
        "task": task_name,
        "seed": seed,
        "faulty": spec is not None,
        "host_success": bool(hs.host_success),
        "strict_success": bool(hs.strict_success),
        "outcome": hs.outcome,
        "requests": hs.requests,
        "faults": events,
        "wall_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
    }


def report(rows: list[dict[str, Any]], tasks: tuple[str, ...]) -> None:
    """Print throughput, success per task and the spread over phases."""
    from captain_ros.evaluation.stats import wilson_interval
    from captain_ros.policy.expert.faults import FAULTS

    mix = [r for r in rows if r["faulty"]]
    clean = [r for r in rows if not r["faulty"]]
    for label, rs in (("mix", mix), ("clean", clean)):
        if rs:
            wall, cpu = sum(r["wall_s"] for r in rs), sum(r["cpu_s"] for r in rs)
            print(
                f"{label:5s}: {len(rs)} episodes, {3600 * len(rs) / wall:.0f} episodes/hour "
                f"({wall / len(rs):.1f} s wall, {cpu / len(rs):.1f} s CPU of this process per episode)"
            )
    print(
        "\n| task | mix host success | mix false finishes | clean host success | faults fired per episode |"
    )
    print("|---|---|---|---|---|")
    for t in tasks:
        m = [r for r in mix if r["task"] == t]
        c = [r for r in clean if r["task"] == t]
        pm, pc = (
            wilson_interval(sum(r["host_success"] for r in m), len(m)),
            wilson_interval(sum(r["host_success"] for r in c), len(c)),
        )
        fired = sum(len(r["faults"]) for r in m) / max(1, len(m))
        ff = sum(r["outcome"] == "false_finish" for r in m)
        print(
            f"| {t} | {pm.successes}/{pm.n} [{pm.low:.2f}, {pm.high:.2f}] | {ff} | "
            f"{pc.successes}/{pc.n} [{pc.low:.2f}, {pc.high:.2f}] | {fired:.2f} |"
        )
    phases = list(dict.fromkeys(FAULTS.values()))
    spread: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in mix:
        for ph in {e["phase"] for e in r["faults"]}:
            spread[(r["task"], ph)][0 if r["host_success"] else 1] += 1
    print("\nsuccesses / failures of mix episodes in which a fault of that phase fired\n")
    print("| task | " + " | ".join(phases) + " | no fault |")
    print("|---|" + "---|" * (len(phases) + 1))
    for t in tasks:
        none = [r for r in mix if r["task"] == t and not r["faults"]]
        cells = [f"{spread[(t, ph)][0]} / {spread[(t, ph)][1]}" for ph in phases]
        nf = f"{sum(r['host_success'] for r in none)} / {sum(not r['host_success'] for r in none)}"
        print(f"| {t} | " + " | ".join(cells) + f" | {nf} |")


def main() -> None:
    from captain_ros.evaluation.runner import parse_seeds

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="all")
    ap.add_argument("--seeds", default="0-9", help="training seeds of the mix (0-999)")
    ap.add_argument("--clean-seeds", default="0-1", help="seeds of the clean expert, same run")
    ap.add_argument("--spec", default="", help="fault spec (empty: the default mix)")
    ap.add_argument("--json", help="write every episode's record here")
    ap.add_argument(
        "--tabulate",
        nargs="+",
        metavar="JSON",
        help="print the tables of earlier runs' --json files together (runs nothing)",
    )
    ns = ap.parse_args()
    tasks = TASKS if ns.tasks == "all" else tuple(ns.tasks.split(","))
    if ns.tabulate:
        report([r for f in ns.tabulate for r in json.loads(Path(f).read_text())["rows"]], tasks)
        return
    seeds, clean_seeds = parse_seeds(ns.seeds), parse_seeds(ns.clean_seeds)
    if any(s >= 1000 for s in [*seeds, *clean_seeds]):
        raise SystemExit("bench_expert_faults: develop on training seeds 0-999 only")
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            for s in seeds:
                rows.append(episode(task, s, ns.spec, Path(tmp)))
                r = rows[-1]
                print(
                    f"{task:13s} seed {s:4d} mix   {r['outcome']:22s} req {r['requests']:3d} "
                    f"faults {','.join(e['fault'] for e in r['faults']) or '-'}",
                    flush=True,
                )
            for s in clean_seeds:
                rows.append(episode(task, s, None, Path(tmp)))
    print(
        f"\nload average at the start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, now "
        f"{os.getloadavg()[0]:.1f}; {os.cpu_count()} cores"
    )
    report(rows, tasks)
    if ns.json:
        Path(ns.json).write_text(
            json.dumps({"rows": rows, "load": [load, os.getloadavg()], "spec": ns.spec}, indent=1)
        )


if __name__ == "__main__":
    main()
