"""Per-turn check of a student against recorded expert episodes, without a simulator.

For every assistant turn of the rows of a ``captain learn dataset`` folder (by default its
``validation.jsonl``: episodes held out of training), the student is given exactly the history the
expert saw (the row's messages up to that turn) and answers greedily; the reply's code is compared
with the expert's, exactly and with string literals aside (some name the episode's object). The
turns of one row are asked in order, so the engine's kept prefix makes each request prefill only
its new tokens. Each request's prompt length and decode time (after its prefill) are kept, so
the same rows give every engine's decode rate by context band on identical histories
(``--engine transformers`` beside ``llamacpp``: issue 29's decode at 3-6k context).

A turn the student misses on every held-out row is a decision it never learned, and it shows here
in minutes instead of in 20 simulated episodes: the first six-task student missed stack's turn 14
(the lower pair's re-verification) on every row, which a masking rule in the dataset had kept out
of training (CHANGELOG, issue 30).

Run: ``.venv/bin/python benchmarks/probe_student_turns.py --data ARM/data --model ARM/package
[--split validation|train] [--tasks stack,insertion] [--rows 5] [--threads 2] [--json out.json]``
(``--model``: a packaged student folder, a transformers folder or a GGUF; ``--engine`` as for
``captain eval``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks" / "experiments")]


def _code(message: dict[str, Any]) -> str:
    """The code of an assistant message's tool calls (one string, calls joined by newlines)."""
    codes = []
    for call in message.get("tool_calls") or []:
        args = call.get("function", {}).get("arguments", "")
        try:
            codes.append(str(json.loads(args).get("code", "")) if isinstance(args, str) else "")
        except ValueError:
            codes.append(args)
    return "\n".join(codes)


def probe(rows: list[Any], engine: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Ask ``engine`` every assistant turn of ``rows``; per task: turns asked, exact and shape
    matches, and the misses by turn index; and decode seconds and tokens by prompt-length band."""
    from compare_student_engines import BANDS, band_name
    from exp_student import code_shape

    from captain_ros.policy.toolcalls import parse_reply

    bands: dict[str, list[float]] = {}
    per_task: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"turns": 0, "exact": 0, "shape": 0, "misses_by_turn": Counter(), "rows": 0}
    )
    for row in rows:
        stats = per_task[row.task]
        stats["rows"] += 1
        engine.reset()
        turns = [i for i, m in enumerate(row.messages) if m["role"] == "assistant"]
        for k, i in enumerate(turns, 1):
            want = _code(row.messages[i])
            out = engine.generate([dict(m) for m in row.messages[:i]], list(row.tools) or None)
            n = len(out.prompt_ids)
            acc = bands.setdefault(next(band_name(a, b) for a, b in BANDS if a <= n < b), [0, 0, 0])
            acc[0] += float(getattr(engine, "last_decode_s", 0.0))
            acc[1] += len(out.completion_ids)
            acc[2] += 1
            got = "\n".join(parse_reply(out.text).code_cells)
            stats["turns"] += 1
            stats["exact"] += got == want
            same_shape = code_shape(got) == code_shape(want)
            stats["shape"] += same_shape
            if not same_shape:
                stats["misses_by_turn"][k] += 1
    decode = {
        k: {
            "requests": r,
            "decode_s": round(d, 3),
            "tokens": int(t),
            "tokens_per_s": t / d if d else None,
        }
        for k, (d, t, r) in bands.items()
    }
    tasks = {
        t: {**s, "misses_by_turn": dict(sorted(s["misses_by_turn"].items()))}
        for t, s in per_task.items()
    }
    return tasks, decode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="a `captain learn dataset` folder")
    ap.add_argument("--model", required=True, help="packaged student, model folder or GGUF")
    ap.add_argument("--split", choices=("validation", "train"), default="validation")
    ap.add_argument("--tasks", default="", help="comma-separated (default: every task)")
    ap.add_argument("--rows", type=int, default=0, help="rows per task (0: all)")
    ap.add_argument("--engine", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--json")
    ns = ap.parse_args()

    from captain_ros.core.errors import CaptainError
    from captain_ros.learn.rows import load_rows
    from captain_ros.policy.engines import make_engine
    from captain_ros.policy.engines.base import EngineSettings

    tasks = {t for t in ns.tasks.split(",") if t}
    try:
        rows, taken = [], Counter()
        for row in load_rows(Path(ns.data) / f"{ns.split}.jsonl"):
            if (not tasks or row.task in tasks) and (not ns.rows or taken[row.task] < ns.rows):
                rows.append(row)
                taken[row.task] += 1
        settings = EngineSettings(
            max_new_tokens=ns.max_new_tokens, temperature=0.0, threads=ns.threads
        )
        engine = make_engine(ns.engine, ns.model, settings)
    except (CaptainError, OSError) as exc:
        print(f"probe_student_turns: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    res, decode = probe(rows, engine)
    wall = time.perf_counter() - t0
    print("| task | rows | turns | same code | same code, literals aside | misses by turn |")
    print("|---|---|---|---|---|---|")
    for t, s in res.items():
        print(
            f"| {t} | {s['rows']} | {s['turns']} | {s['exact']} | {s['shape']} | "
            f"{', '.join(f'r{k}: {n}' for k, n in s['misses_by_turn'].items()) or '-'} |"
        )
    print("\n| prompt tokens | requests | decode s | reply tokens | decode tokens/s |")
    print("|---|---|---|---|---|")
    for k, d in decode.items():
        rate = f"{d['tokens_per_s']:.1f}" if d["tokens_per_s"] else "-"
        print(f"| {k} | {d['requests']} | {d['decode_s']:.1f} | {d['tokens']} | {rate} |")
    print(
        f"\n{sum(s['turns'] for s in res.values())} turns in {wall:.0f} s ({ns.split} rows, "
        f"engine {getattr(engine, 'name', ns.engine)})"
    )
    if ns.json:
        Path(ns.json).write_text(
            json.dumps(
                {"split": ns.split, "model": ns.model, "wall_s": wall, "tasks": res}, indent=2
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
