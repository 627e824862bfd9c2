"""``captain learn dataset RUN_DIR_OR_BAG... --out DIR``: supervised rows from recorded episodes.

Reads episode folders, evaluation runs (folders of episode folders) and rosbag2 bags (in-process,
the ROS recorder's, hardware bags without privileged topics); re-renders each request's history
exactly as the policy saw it (checked against the recorded hashes), packs whole episodes into rows
with per-turn weights, masks earlier ``mark_point`` coordinates with ``--mask-coords``, filters by
``--outcomes``, splits by seed and deduplicates. See :mod:`captain_ros.learn.data`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from captain_ros.core.errors import CaptainError


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="captain learn dataset", description=__doc__.split("\n")[0])
    p.add_argument("inputs", nargs="+", help="episode folders, evaluation runs or bags")
    p.add_argument(
        "--out", required=True, help="dataset folder (train/validation.jsonl, stats.json)"
    )
    p.add_argument(
        "--outcomes",
        default="strict",
        choices=("strict", "host", "all"),
        help="keep strict successes (default), host successes, or every episode",
    )
    p.add_argument(
        "--mask-coords",
        dest="mask_coords",
        type=float,
        default=0.0,
        help="probability of masking each earlier mark_point's pixel coordinates (0.2)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the coordinate mask")
    p.add_argument(
        "--finish-weight",
        dest="finish_weight",
        type=float,
        default=1.0,
        help="w_t of a turn that calls finish(), the decision an episode makes once "
        "(default 1: like every other kept turn)",
    )
    p.add_argument(
        "--branch-weight",
        dest="branch_weight",
        type=float,
        default=1.0,
        help="w_t of a branch turn: where the inputs' episodes go on differently after the same "
        "steps, another decision made once (default 1)",
    )
    p.add_argument("--validation-fraction", dest="validation_fraction", type=float, default=0.1)
    p.add_argument("--json", action="store_true", help="print stats.json")
    p.add_argument("--debug", action="store_true")
    ns = p.parse_args(argv)
    from captain_ros.learn.data import build_dataset

    try:
        report = build_dataset(
            ns.inputs,
            ns.out,
            ns.outcomes,
            ns.mask_coords,
            ns.seed,
            ns.validation_fraction,
            log=lambda m: print(f"captain learn dataset: {m}", file=sys.stderr),
            finish_weight=ns.finish_weight,
            branch_weight=ns.branch_weight,
        )
    except (CaptainError, OSError, ValueError) as exc:
        if ns.debug:
            raise
        print(f"captain learn dataset: {exc}", file=sys.stderr)
        return 2
    if ns.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(
            f"{report.episodes} episodes -> {report.rows.get('train', 0)} train / "
            f"{report.rows.get('validation', 0)} validation rows, {report.tokens['total']} tokens "
            f"({report.duplicates} duplicate rows dropped, {len(report.skipped)} inputs skipped, "
            f"{report.filtered_out} episodes filtered out); wrote {ns.out}"
        )
    return 0
