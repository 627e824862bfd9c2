"""Is the scripted expert's behaviour unchanged? Two checks on recorded ``captain eval`` runs.

- ``--compare RUN_A RUN_B``: episode by episode (same task and seed in both runs), the outcome,
  requests and physical actions, and the receipts of every robot call in order (physical ones
  alone, and all of them). Identical receipts mean the same motions, measurements and results.
- ``--replay RUN``: host only, no simulator: feed every recorded cell output of RUN back into the
  *current* expert and check that it writes the same cells, byte for byte (e.g. after refactoring
  the plans, against a run recorded before).

Usage: ``.venv/bin/python benchmarks/bench_expert_identity.py --compare runs/old runs/new``
       ``.venv/bin/python benchmarks/bench_expert_identity.py --replay runs/new``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles

PHYSICAL = ("move_to", "release", "hold", "recover", "jaw")


def records(folder: Path) -> list[dict[str, Any]]:
    return EpisodeFiles(folder).read_trajectory()


def episodes(run: Path) -> dict[tuple[str, str], Path]:
    return {
        (p.parent.name, p.name): p
        for p in sorted(run.glob("*/seed_*"))
        if EpisodeFiles(p).is_episode()
    }


def receipts(recs: list[dict[str, Any]]) -> list[str]:
    return [
        r
        for rec in recs
        if rec.get("type") == "request"
        for c in rec.get("calls", [])
        for r in c.get("receipts", [])
    ]


def summary(recs: list[dict[str, Any]]) -> tuple[Any, ...]:
    s = recs[-1].get("summary", {}) if recs and recs[-1].get("type") == "episode_end" else {}
    return s.get("outcome"), s.get("host_success"), s.get("requests"), s.get("physical_actions")


def compare(a: Path, b: Path) -> int:
    ea, eb = episodes(a), episodes(b)
    common = sorted(set(ea) & set(eb))
    same_out = same_phys = same_all = 0
    for key in common:
        ra, rb = records(ea[key]), records(eb[key])
        xa, xb = receipts(ra), receipts(rb)
        pa = [x for x in xa if x.split()[0] in PHYSICAL]
        pb = [x for x in xb if x.split()[0] in PHYSICAL]
        same_out += summary(ra) == summary(rb)
        same_phys += pa == pb
        same_all += xa == xb
        if pa != pb or summary(ra) != summary(rb):
            i = next(
                (i for i, (x, y) in enumerate(zip(pa, pb, strict=False)) if x != y),
                min(len(pa), len(pb)),
            )
            print(
                f"differs: {key[0]} {key[1]}: {summary(ra)} vs {summary(rb)}; physical receipt {i}: "
                f"{pa[i : i + 1]} vs {pb[i : i + 1]}"
            )
    print(
        f"{len(common)} episodes in both runs: same outcome/requests/actions {same_out}, same physical "
        f"receipts {same_phys}, same receipts of every call {same_all}"
    )
    return 0 if same_out == same_phys == len(common) else 1


def replay(run: Path) -> int:
    from captain_ros.policy.expert import ScriptedExpert
    from captain_ros.policy.scripted import instruction_from

    n = same = 0
    for (task, seed), folder in episodes(run).items():
        recs = records(folder)
        if recs[-1].get("type") != "episode_end" or recs[0].get("policy") not in (None, "scripted"):
            continue
        expert = ScriptedExpert(
            task, instruction_from([{"role": "user", "content": recs[0]["task_md"]}])
        )
        out, ok = None, True
        for rec in (r for r in recs if r.get("type") == "request"):
            cell = expert.next_cell(out)
            code = rec["calls"][0]["code"] if rec.get("calls") else None
            if (cell.code if cell else None) != code:
                ok = False
                print(f"differs: {task} {seed} request {rec['t']}")
                break
            if cell is None:
                break
            out = rec["calls"][0]["output"]
        n += 1
        same += ok
    print(f"{n} episodes replayed: the current expert writes the same cells in {same}")
    return 0 if n == same else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"))
    g.add_argument("--replay", metavar="RUN")
    ns = ap.parse_args()
    sys.exit(
        compare(Path(ns.compare[0]), Path(ns.compare[1])) if ns.compare else replay(Path(ns.replay))
    )


if __name__ == "__main__":
    main()
