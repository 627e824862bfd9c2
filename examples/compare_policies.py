"""An evaluation over a few training seeds and a paired comparison of two policies.

    .venv/bin/python examples/compare_policies.py --task open_drawer --seeds 0-2 --workers 2

Runs the scripted expert (A) and the expert with one injected fault (B, ``scripted-faulty``: it
lets go of what it grasped, on open_drawer the handle before the pull) on the same seeds, then
reports strict success with Wilson 95% intervals and the exact McNemar test on the paired
outcomes: the figures of ``captain eval`` + ``captain compare``. Only training seeds (0-999) are accepted:
held-out seeds (1000-1999) are for final figures, not for trying things out.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from captain_ros.evaluation import compare, wilson_interval
from captain_ros.evaluation.config import EpisodeConfig, PolicyConfig, RecordingConfig
from captain_ros.evaluation.runner import evaluate, make_jobs, parse_seeds
from captain_ros.harness.record.episode_record import EpisodeRecord

POLICIES = {"A": "scripted", "B": "scripted-faulty:premature_release=1.0,seed=0"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="open_drawer")
    parser.add_argument("--seeds", default="0-2", help="training seeds, e.g. 0-2 or 3,5,9")
    parser.add_argument("--workers", type=int, default=1, help="episodes in parallel processes")
    parser.add_argument("--out", default="runs/example_compare")
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    if max(seeds) >= 1000:
        parser.error("use training seeds (0-999); held-out seeds 1000-1999 are for final figures")

    runs: dict[str, list[EpisodeRecord]] = {}
    for name, policy in POLICIES.items():
        out = Path(args.out) / name
        # no bags or reports: an evaluation keeps every episode's summary and trajectory
        config = EpisodeConfig(  # the seeds' jobs differ only by seed and folder
            args.task,
            policy=PolicyConfig(policy),
            recording=RecordingConfig(bag=False, report=False),
        )
        jobs = make_jobs([args.task], seeds, out, config)
        report = evaluate(jobs, out, workers=args.workers)  # writes eval.json and eval.png
        runs[name] = [EpisodeRecord.from_dict(e) for e in report["episodes"]]
        strict = report["overall"]["strict_success"]
        print(f"{name} = {policy}: outcomes {[e.outcome for e in runs[name]]}")
        print(f"  strict success {wilson_interval(strict['successes'], strict['n'])} (Wilson 95%)")

    # Paired: the same (task, seed) under A and B; McNemar looks only at the discordant pairs.
    paired = compare(runs["A"], runs["B"], metric="strict_success")
    test = paired["mcnemar"]
    print(
        f"paired episodes {paired['paired']}: both succeeded {test['both']}, only A "
        f"{test['only_a']}, only B {test['only_b']}, neither {test['neither']}"
    )
    # A few seeds cannot show a difference: n discordant pairs all going one way give
    # p = 2 / 2**n (0.25 for 3); an A/B claim needs tens of seeds.
    print(f"exact McNemar p = {test['p_value']:.3f}")
    crashed = [e for run in runs.values() for e in run if e.outcome == "error"]
    for e in crashed:
        print(f"episode {e.task}:{e.seed} ({e.policy}) crashed: {e.error.strip().splitlines()[-1]}")
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main())
