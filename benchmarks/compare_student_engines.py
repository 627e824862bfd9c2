"""Issue 29's "done when": the same trained student on two engines, on the same seeds.

Reads two ``captain eval`` folders of the same student and seeds (one per engine) and reports:
model time per episode (median, total) and its ratio, the whole episode's wall time split (model,
robot, harness), how many episodes wrote exactly the same replies on both engines, the outcomes on
those seeds (they must agree), and where the replies part (the request, and the outcomes there).

Run: ``.venv/bin/python benchmarks/compare_student_engines.py RUN_A RUN_B [--json out.json]``
(RUN_A the reference, e.g. transformers; RUN_B the engine measured against it, e.g. llama.cpp).
Decode seconds and rates come from each request's ``policy_info.decode_s`` (the decode after the
prefill), with the prompt-lookup drafts the llamacpp engine made and kept.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def episodes(run: Path) -> dict[int, Any]:
    from captain_ros.evaluation.summary import load_episodes

    return {e.seed: e for e in load_episodes(run)}


@functools.cache
def requests(out_dir: str) -> tuple[dict[str, Any], ...]:
    """The request lines of an episode's trajectory (read once per episode)."""
    from captain_ros.core.episode_folder import EpisodeFiles

    lines = EpisodeFiles(Path(out_dir)).read_trajectory()
    return tuple(r for r in lines if r.get("type") == "request")


def replies(out_dir: str) -> list[str]:
    return [
        json.dumps([r.get("reasoning", ""), [c.get("code", "") for c in r.get("calls", [])]])
        for r in requests(out_dir)
    ]


def decode_stats(out_dir: str) -> tuple[float, int, int, int]:
    """(decode seconds, reply tokens, drafted tokens, kept drafted tokens) of an episode's requests
    (``policy_info.decode_s``; episodes recorded before it was written count 0 s)."""
    dec, tokens, drafted, kept = 0.0, 0, 0, 0
    for r in requests(out_dir):
        info = r.get("policy_info") or {}
        dec += float(info.get("decode_s", 0.0))
        tokens += int(r.get("completion_tokens") or 0)
        drafted += int(info.get("drafted_tokens", 0))
        kept += int(info.get("accepted_tokens", 0))
    return dec, tokens, drafted, kept


BANDS = ((0, 2000), (2000, 3000), (3000, 6000), (6000, 1 << 30))  # prompt tokens [lo, hi)


def band_name(lo: int, hi: int) -> str:
    return f"{lo // 1000}k+" if hi >= 1 << 30 else f"{lo // 1000}-{hi // 1000}k"


def decode_by_context(out_dirs: list[str]) -> dict[str, dict[str, float]]:
    """Decode seconds, reply tokens and tokens/s of the requests whose prompt falls in each band of
    ``BANDS`` (the context a reply is decoded at: issue 29's "decode at 3-6k context")."""
    acc = {band_name(lo, hi): [0.0, 0, 0] for lo, hi in BANDS}
    for d in out_dirs:
        for r in requests(d):
            info = r.get("policy_info") or {}
            n = int(r.get("prompt_tokens") or 0)
            name = next(band_name(lo, hi) for lo, hi in BANDS if lo <= n < hi)
            acc[name][0] += float(info.get("decode_s", 0.0))
            acc[name][1] += int(r.get("completion_tokens") or 0)
            acc[name][2] += 1
    return {
        k: {
            "requests": n,
            "decode_s": round(s, 3),
            "tokens": t,
            "tokens_per_s": round(t / s, 2) if s > 0 else None,
        }
        for k, (s, t, n) in acc.items()
        if n
    }


def engine_of(e: Any) -> str:
    return str((e.extra or {}).get("engine", "?"))


def compare(run_a: Path, run_b: Path) -> dict[str, Any]:
    a, b = episodes(run_a), episodes(run_b)
    seeds = sorted(set(a) & set(b))
    same, parted = [], []
    for s in seeds:
        ra, rb = replies(a[s].out_dir), replies(b[s].out_dir)
        if ra == rb:
            same.append(s)
        else:
            first = next(
                (i + 1 for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y),
                min(len(ra), len(rb)) + 1,
            )
            parted.append(
                {
                    "seed": s,
                    "first_differing_request": first,
                    "strict_a": a[s].strict_success,
                    "strict_b": b[s].strict_success,
                }
            )

    def side(runs: dict[int, Any]) -> dict[str, Any]:
        eps = [runs[s] for s in seeds]
        dec = [decode_stats(e.out_dir) for e in eps]
        decode_s, tokens = sum(d[0] for d in dec), sum(d[1] for d in dec)
        return {
            "decode_s_total": decode_s,
            "decode_tokens_per_s": tokens / decode_s if decode_s > 0 else None,
            "drafted_tokens": sum(d[2] for d in dec),
            "kept_drafted_tokens": sum(d[3] for d in dec),
            "engine": engine_of(eps[0]) if eps else "?",
            "model_s_median": statistics.median(e.model_s for e in eps),
            "model_s_total": sum(e.model_s for e in eps),
            "backend_s_total": sum(e.backend_s for e in eps),
            "harness_s_total": sum(e.harness_s for e in eps),
            "wall_s_median": statistics.median(e.wall_s for e in eps),
            "strict": sum(e.strict_success for e in eps),
            "completion_tokens": sum(e.completion_tokens for e in eps),
            "decode_by_context": decode_by_context([e.out_dir for e in eps]),
        }

    sa, sb = side(a), side(b)
    return {
        "seeds": seeds,
        "a": sa,
        "b": sb,
        "model_time_ratio_a_over_b": sa["model_s_total"] / max(sb["model_s_total"], 1e-9),
        "same_replies": same,
        "outcomes_agree_on_same_replies": all(
            a[s].strict_success == b[s].strict_success and a[s].host_success == b[s].host_success
            for s in same
        ),
        "parted": parted,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_a")
    ap.add_argument("run_b")
    ap.add_argument("--json")
    ns = ap.parse_args()
    res = compare(Path(ns.run_a), Path(ns.run_b))
    if ns.json:
        Path(ns.json).write_text(json.dumps(res, indent=2))
    a, b = res["a"], res["b"]
    print(
        "| engine | model s / episode (median) | model s (total) | decode s (total) | decode tok/s "
        "| drafted / kept | robot s | harness s | wall s / episode (median) | strict |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for x in (a, b):
        rate = x["decode_tokens_per_s"]
        print(
            f"| {x['engine']} | {x['model_s_median']:.1f} | {x['model_s_total']:.0f} | "
            f"{x['decode_s_total']:.0f} | {f'{rate:.1f}' if rate else '-'} | "
            f"{x['drafted_tokens']} / {x['kept_drafted_tokens']} | "
            f"{x['backend_s_total']:.0f} | {x['harness_s_total']:.0f} | {x['wall_s_median']:.1f} | "
            f"{x['strict']}/{len(res['seeds'])} |"
        )
    print(
        "\n| prompt tokens | "
        + " | ".join(f"{x['engine']} decode tok/s (requests)" for x in (a, b))
        + " | ratio |\n|---|---|---|---|"
    )
    for lo, hi in BANDS:
        name = band_name(lo, hi)
        ra, rb = a["decode_by_context"].get(name), b["decode_by_context"].get(name)
        if not (ra or rb):
            continue
        cell = [f"{r['tokens_per_s']} ({r['requests']})" if r else "-" for r in (ra, rb)]
        ratio = (
            f"{rb['tokens_per_s'] / ra['tokens_per_s']:.2f}x"
            if ra and rb and ra["tokens_per_s"] and rb["tokens_per_s"]
            else "-"
        )
        print(f"| {name} | {cell[0]} | {cell[1]} | {ratio} |")
    print(
        f"\nModel time {a['engine']} / {b['engine']}: {res['model_time_ratio_a_over_b']:.2f}x over "
        f"{len(res['seeds'])} seeds. Identical replies on {len(res['same_replies'])} seeds; outcomes "
        f"agree there: {res['outcomes_agree_on_same_replies']}. Replies part on {len(res['parted'])} "
        f"seeds: {res['parted']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
