"""How many tokens the scripted expert writes: its first cell, its helper library, whole episodes.

A student trained on the expert's trajectories writes every token of them (CaPtain appendix C
rewrote its teacher trajectories onto four helpers for this reason). Counted with the packaged
SmolLM2 tokenizer (``captain_ros.policy.transformers_chat.smollm2_folder()``), on the text the
policy writes: the code of each tool call and, separately, the reasoning.

Two sources:

- ``--runs LABEL=DIR ...``: episode folders of ``captain eval`` runs (``DIR/<task>/seed_*``): per
  task, the first cell, and the mean tokens and requests per episode. Give a run of the old
  expert and one of the new to compare them on the same seeds.
- always: the current expert in this process (no simulator): its first cell, the text of its
  whole library (every session function any task may send) and the largest functions.

Usage: ``.venv/bin/python benchmarks/bench_expert_tokens.py --runs before=runs/a after=runs/b [--json F]``
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles


def tokenizer() -> Any:
    from transformers import AutoTokenizer

    from captain_ros.policy.transformers_chat import smollm2_folder

    folder, gguf = smollm2_folder()
    return AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf)


def count(tok: Any, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"]) if text else 0


def episode_requests(folder: Path) -> list[tuple[str, str]]:
    """(reasoning, code) of each request of one recorded episode."""
    out = []
    for rec in EpisodeFiles(folder).read_trajectory_split().requests:
        code = "\n".join(c.get("code", "") for c in rec.get("calls", []))
        out.append((rec.get("reasoning") or "", code))
    return out


def from_runs(tok: Any, runs: dict[str, Path]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for label, run in runs.items():
        per_task: dict[str, Any] = {}
        for task_dir in sorted(p for p in run.iterdir() if p.is_dir()):
            eps = [
                episode_requests(ep)
                for ep in sorted(task_dir.glob("seed_*"))
                if EpisodeFiles(ep).is_episode()
            ]
            eps = [e for e in eps if e]
            if not eps:
                continue
            code = [sum(count(tok, c) for _, c in e) for e in eps]
            reason = [sum(count(tok, r) for r, _ in e) for e in eps]
            per_task[task_dir.name] = {
                "episodes": len(eps),
                "first_cell_code_tokens": count(tok, eps[0][0][1]),
                "mean_code_tokens": statistics.mean(code),
                "mean_reasoning_tokens": statistics.mean(reason),
                "mean_requests": statistics.mean(len(e) for e in eps),
            }
        table[label] = per_task
    return table


def current(tok: Any) -> dict[str, Any]:
    from captain_ros.policy.expert import ScriptedExpert, source
    from captain_ros.policy.expert.plans import PLANS

    first = ScriptedExpert("pick_place").next_cell(None)
    assert first is not None and PLANS
    names = source.registered()
    sizes = {n: count(tok, source.session_text(n)) for n in names}
    library, _ = source.definitions(names)
    return {
        "first_cell_code_tokens": count(tok, first.code),
        "first_cell_reasoning_tokens": count(tok, first.reasoning),
        "first_cell_functions": [
            ln[4 : ln.index("(")] for ln in first.code.splitlines() if ln.startswith("def ")
        ],
        "library_tokens": count(tok, source.HEADER + "\n" + library),
        "library_functions": len(names),
        "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:8],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", nargs="*", default=[], help="LABEL=DIR of a captain eval run")
    ap.add_argument("--json", help="also write the figures to this file")
    ns = ap.parse_args()
    runs = {}
    for item in ns.runs:
        label, _, path = item.partition("=")
        runs[label] = Path(path)
    tok = tokenizer()
    res = {"current": current(tok), "runs": from_runs(tok, runs)}
    cur = res["current"]
    print(
        f"current expert: first cell {cur['first_cell_code_tokens']} code tokens "
        f"(+{cur['first_cell_reasoning_tokens']} reasoning), defines {', '.join(cur['first_cell_functions'])}"
    )
    print(
        f"whole library: {cur['library_functions']} session functions, {cur['library_tokens']} tokens; "
        "largest: " + ", ".join(f"{n} {t}" for n, t in cur["largest"])
    )
    if res["runs"]:
        labels = list(res["runs"])
        tasks = sorted({t for r in res["runs"].values() for t in r})
        print(
            "\n| task | "
            + " | ".join(
                f"{lb}: first cell / code per ep / reasoning per ep / requests" for lb in labels
            )
            + " |"
        )
        print("|---|" + "---|" * len(labels))
        for t in tasks:
            cells = []
            for lb in labels:
                r = res["runs"][lb].get(t)
                cells.append(
                    "-"
                    if r is None
                    else f"{r['first_cell_code_tokens']} / {r['mean_code_tokens']:.0f} / "
                    f"{r['mean_reasoning_tokens']:.0f} / {r['mean_requests']:.1f} (n={r['episodes']})"
                )
            print(f"| {t} | " + " | ".join(cells) + " |")
    if ns.json:
        Path(ns.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
