"""How many prompt tokens each request of a recorded episode must prefill, by compaction block.

An engine that keeps the previous request's tokens (llama.cpp's kept prefix) prefills only the
tokens after the longest common prefix with the new prompt. Compaction that removes one more old
turn at each request rewrites the prompt right after the task, so an episode past the compaction
threshold prefills ~6k tokens a request (95 s on one core of this VM). This re-renders every
request of the given episodes exactly as the harness renders it (the recorded context
configuration, ``compact_block_turns`` set to each ``--blocks`` value), builds the real SmolLM2
prompt token ids through the chat template, and counts per request the tokens past the common
prefix with the previous request's prompt. For block 1 (what the records ran) it sets that count
beside llama.cpp's own recorded ``prefilled_tokens``, the check that the count is the engine's.

Run: ``.venv/bin/python benchmarks/bench_compaction_prefix.py EPISODE_DIR... [--blocks 1,4,8]
[--json out.json]``. Torch-free; seconds per episode.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any


def episode_prefill(folder: Path, block: int, tokenizer: Any) -> dict[str, Any]:
    from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
    from captain_ros.harness.record.recorded import RecordedEpisode
    from captain_ros.policy.chat_render import render_chat
    from captain_ros.policy.prefix_cache import common_prefix_len

    rec = RecordedEpisode.load(folder)
    fields = set(ContextConfig.__dataclass_fields__)
    cfg = ContextConfig(
        **{k: v for k, v in (rec.start.get("context") or {}).items() if k in fields}
    )
    cfg = replace(cfg, compact_block_turns=block)
    history = rec.history()
    tools = rec.start.get("tools") or [PYTHON_TOOL_SCHEMA]
    previous: list[int] = []
    prompts, prefills, recorded = [], [], []
    for t in range(1, rec.n_requests + 1):
        text = render_chat(tokenizer, render(history.upto(t), cfg), tools)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        prompts.append(len(ids))
        prefills.append(len(ids) - common_prefix_len(previous, ids))
        info = rec.requests[t - 1].get("policy_info") or {}
        recorded.append(info.get("prefilled_tokens"))
        previous = ids
    return {
        "episode": str(folder),
        "block": block,
        "requests": rec.n_requests,
        "prompt_tokens_max": max(prompts, default=0),
        "prefill_tokens": sum(prefills),
        "prefill_per_request": prefills,
        "recorded_prefilled_tokens": recorded,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("episodes", nargs="+", help="recorded episode folders")
    ap.add_argument("--blocks", default="1,4,8", help="compact_block_turns values to compare")
    ap.add_argument("--json", help="write every figure here")
    a = ap.parse_args(argv)
    from transformers import AutoTokenizer

    from captain_ros.policy.transformers_chat import smollm2_folder

    folder, gguf = smollm2_folder()
    tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf)
    rows = [
        episode_prefill(Path(ep), int(b), tok)
        for ep in a.episodes
        for b in a.blocks.split(",")
        if b
    ]
    print(
        "| episode | block | requests | prefill tokens (all requests) | max prompt | vs recorded |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        rec = [x for x in r["recorded_prefilled_tokens"] if x is not None]
        check = f"recorded {sum(rec)}" if r["block"] == 1 and len(rec) == r["requests"] else "-"
        print(
            f"| {Path(r['episode']).name} | {r['block']} | {r['requests']} | "
            f"{r['prefill_tokens']} | {r['prompt_tokens_max']} | {check} |"
        )
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
