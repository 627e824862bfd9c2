"""Speed of the in-process student per request, against the model's own prefill and decode rates.

A recorded expert episode is replayed request by request through
:class:`~captain_ros.policy.transformers_chat.TransformersChat` (the deployed policy, KV cache
kept across requests, greedy, ``--max-new-tokens``): request t sees the expert's history h_t, as a
dataset row does. For every request the model time (rendering, tokenizing, cache bookkeeping and
``generate``) is compared with the physical limit measured right there on the same model and the
same cache: a copy of the cache as the request found it, one forward pass over the request's new
(uncached) prompt tokens, then one forward pass per generated token. Ratio = model time /
(new tokens / prefill rate + generated tokens / generation rate); goal <= 1.2. The first requests
are also run with the cache disabled (every prompt prefilled in full) to show what the cache saves.

Run: ``.venv/bin/python benchmarks/bench_student_speed.py [--episode RUN_DIR] [--model smollm2|DIR]
[--max-new-tokens 64] [--requests 12] [--json out.json]``. Without ``--episode`` a scripted-expert
pick_place episode on train seed 3 is recorded first (MuJoCo).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, render
from captain_ros.harness.record.trajectory import load_history
from captain_ros.policy.transformers_chat import TransformersChat

TOOLS = [PYTHON_TOOL_SCHEMA]


def record_expert(out: Path) -> Path:
    from captain_ros.evaluation.config import EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.episode import run_one

    run_one(EpisodeConfig("pick_place", 3, str(out), recording=RecordingConfig(bag=False)))
    return out


def raw_request(model: Any, cache: Any, new_ids: list[int], n_gen: int) -> tuple[float, float]:
    """Seconds for one forward over ``new_ids`` after ``cache``, and for ``n_gen - 1`` greedy
    single-token forwards after that (the first generated token comes from the prefill logits)."""
    with torch.inference_mode():
        t0 = time.perf_counter()
        out = model(input_ids=torch.tensor([new_ids]), past_key_values=cache, use_cache=True)
        tok = out.logits[0, -1].argmax()
        t1 = time.perf_counter()
        for _ in range(max(0, n_gen - 1)):
            out = model(
                input_ids=tok.view(1, 1), past_key_values=out.past_key_values, use_cache=True
            )
            tok = out.logits[0, -1].argmax()
        t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episode", type=Path, default=None, help="a recorded episode folder")
    ap.add_argument("--model", default="smollm2", help="smollm2 | a model folder")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--requests", type=int, default=12, help="requests replayed at most")
    ap.add_argument("--uncached", type=int, default=3, help="requests also run without the cache")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    episode = args.episode or record_expert(Path(tempfile.mkdtemp(prefix="bench_student_")) / "ep")
    history = load_history(EpisodeFiles(episode).trajectory)
    if args.model == "smollm2":
        from captain_ros.learn.models import smollm2_base

        folder = smollm2_base()
    else:
        folder = Path(args.model)
    chat = TransformersChat(folder, device="cpu", max_new_tokens=args.max_new_tokens, temperature=0)
    limit = int(getattr(chat.model.config, "max_position_embeddings", 8192)) - args.max_new_tokens
    rows = []
    for t in range(1, min(len(history.turns), args.requests) + 1):
        messages = render(history.upto(t))
        prompt_ids = chat.tokenizer(chat.render(messages, TOOLS), add_special_tokens=False)[
            "input_ids"
        ]
        if len(prompt_ids) > limit:
            break
        before = copy.deepcopy(chat.prefix.cache)
        before_ids = list(chat.prefix.ids)
        gen = chat.generate(messages, TOOLS)
        if gen.cache.reused and before is not None:
            extra = before.get_seq_length() - gen.cache.reused
            if extra > 0:
                before.crop(-extra)
        else:
            before = None
        assert before_ids[: gen.cache.reused] == list(gen.prompt_ids[: gen.cache.reused])
        prefill_s, decode_s = raw_request(
            chat.model, before, list(gen.prompt_ids[gen.cache.reused :]), len(gen.completion_ids)
        )
        rows.append(
            {
                "t": t,
                "prompt_tokens": len(gen.prompt_ids),
                "reused": gen.cache.reused,
                "prefilled": gen.cache.prefilled,
                "generated": len(gen.completion_ids),
                "model_s": gen.model_s,
                "raw_prefill_s": prefill_s,
                "raw_decode_s": decode_s,
                "prefill_tok_s": gen.cache.prefilled / prefill_s,
                "gen_tok_s": (len(gen.completion_ids) - 1) / decode_s if decode_s else None,
                "ratio": gen.model_s / (prefill_s + decode_s),
            }
        )
        r = rows[-1]
        print(
            f"request {t:>2}: prompt {r['prompt_tokens']:>5} tok, reused {r['reused']:>5}, "
            f"prefilled {r['prefilled']:>5}, generated {r['generated']:>3}: model {r['model_s']:.2f} s"
            f" vs raw {prefill_s:.2f} + {decode_s:.2f} s -> {r['ratio']:.2f}x",
            flush=True,
        )
    plain = TransformersChat(
        folder, device="cpu", max_new_tokens=args.max_new_tokens, temperature=0, reuse_cache=False
    )
    uncached = []
    for r in rows[1 : 1 + args.uncached]:
        gen = plain.generate(render(history.upto(r["t"])), TOOLS)
        uncached.append({"t": r["t"], "model_s": gen.model_s, "cached_model_s": r["model_s"]})
        print(
            f"request {r['t']:>2} without the cache: {gen.model_s:.2f} s (with: {r['model_s']:.2f} s)"
        )
    ratios = [r["ratio"] for r in rows]
    res = {
        "model": args.model,
        "episode": str(episode),
        "max_new_tokens": args.max_new_tokens,
        "threads": args.threads,
        "requests": rows,
        "uncached": uncached,
        "ratio_median": statistics.median(ratios),
        "ratio_max": max(ratios),
        "ratio_total": sum(r["model_s"] for r in rows)
        / sum(r["raw_prefill_s"] + r["raw_decode_s"] for r in rows),
        "machine": platform.processor() or platform.machine(),
        "load_avg": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(
        f"{len(rows)} requests: model time / physical limit median {res['ratio_median']:.2f}x, "
        f"max {res['ratio_max']:.2f}x, total {res['ratio_total']:.2f}x (load {res['load_avg'][0]:.1f})"
    )
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
