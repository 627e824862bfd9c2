"""Where an evaluation's failures leave the plan: each failed episode's first request whose code
differs from the plan, string literals aside, and what it wrote there.

The plan is the code sequence most of the run's own strict successes follow (or, with
``--expert DIR``, the expert's successes under DIR), the rule of ``exp_student.py``'s report
(``first_off_plan``). Torch-free; reads each episode's summary and trajectory only.

Run: ``.venv/bin/python benchmarks/first_off_plan.py EVAL_DIR [--expert DIR] [--json out.json]``
(EVAL_DIR: a ``captain eval --out`` folder; every task under it is read).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import SUMMARY, TRAJECTORY
from captain_ros.learn.data.branches import code_shape, request_code


def _episodes(root: Path) -> list[tuple[dict[str, Any], list[str]]]:
    out = []
    for summary in sorted(root.glob(f"**/seed_*/{SUMMARY}")):
        s = json.loads(summary.read_text())
        codes = []
        for line in (summary.parent / TRAJECTORY).read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "request":
                codes.append(request_code(rec) if rec.get("calls") else "<no tool call>")
        out.append((s, codes))
    return out


def plans(
    episodes: list[tuple[dict[str, Any], list[str]]],
) -> dict[str, tuple[list[str], int, int]]:
    """Per task: the most common code-shape sequence of the strict successes, how many follow
    it, and how many successes there are."""
    seqs: dict[str, Counter[tuple[str, ...]]] = defaultdict(Counter)
    for s, codes in episodes:
        if s.get("strict_success"):
            seqs[s["task"]][tuple(code_shape(c) for c in codes)] += 1
    return {
        t: (list(c.most_common(1)[0][0]), c.most_common(1)[0][1], sum(c.values()))
        for t, c in seqs.items()
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("eval_dir")
    ap.add_argument("--expert", help="take the plan from the expert's episodes under this folder")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    eps = _episodes(Path(a.eval_dir))
    if not eps:
        print(f"first_off_plan: no episodes under {a.eval_dir}", file=sys.stderr)
        return 2
    plan = plans(_episodes(Path(a.expert)) if a.expert else eps)
    rows = []
    for s, codes in eps:
        if s.get("strict_success"):
            continue
        steps, _, _ = plan.get(s["task"], ([], 0, 0))
        shapes = [code_shape(c) for c in codes]
        k = next((i for i, c in enumerate(shapes) if i >= len(steps) or c != steps[i]), None)
        rows.append({
            "task": s["task"], "seed": s["seed"], "outcome": s.get("outcome"),
            "requests": len(codes), "first_off_plan": None if k is None else k + 1,
            "wrote": None if k is None else codes[k][:160],
            "plan": steps[k][:160] if k is not None and k < len(steps) else None,
        })  # fmt: skip
    for task, (steps, follow, n) in sorted(plan.items()):
        print(f"{task}: plan of {len(steps)} requests, followed by {follow} of {n} successes")
    for r in rows:
        print(f"{r['task']} {r['seed']} {r['outcome']} ({r['requests']} requests): request "
              f"{r['first_off_plan']} wrote {r['wrote']!r}; plan {r['plan']!r}")  # fmt: skip
    counts = Counter((r["task"], r["first_off_plan"]) for r in rows)
    print("failures by first off-plan request:", dict(sorted(counts.items(), key=str)))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
