"""Tokens per episode per task under two prompt profiles, in SmolLM2's own tokens.

Runs the scripted expert (MuJoCo, training seeds only) on each task under each profile and
renders every request exactly as a student would see it (the harness renderer, then SmolLM2's
chat template with the tool schema). Per task and profile it reports the TASK.md tokens, the first
and the last prompt of an episode, the tokens an engine with prefix reuse prefills over the
episode (the first prompt plus each request's growth: an upper bound, since the replies it counts
are already in the cache) and the replies' reasoning and code tokens (what SFT supervises,
without the tool-call envelope).

    .venv/bin/python benchmarks/bench_profile_tokens.py --seeds 0-2 --out runs/profile_tokens

Writes ``OUT/profile_tokens.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

TASKS = ("pick_place", "stack", "restack", "open_drawer", "two_arm_lift", "insertion")


def _seeds(spec: str) -> list[int]:
    """``0-2,300-311`` -> [0, 1, 2, 300, ..., 311]."""
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def _episode(task_name: str, seed: int, profile: str, out: Path) -> dict[str, float]:
    from captain_ros.evaluation.episode import build_robot
    from captain_ros.harness.episode import EpisodeOptions, run_episode
    from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
    from captain_ros.harness.episode.tokens import token_counter
    from captain_ros.harness.record.backend_source import BackendPrivileged
    from captain_ros.harness.record.recorded import RecordedEpisode
    from captain_ros.policy.chat_render import render_chat
    from captain_ros.policy.factory import make_policy

    task, backend, service = build_robot(task_name, seed)
    try:
        hs = run_episode(
            task,
            seed,
            service,
            make_policy("scripted"),
            None,
            out,
            options=EpisodeOptions(profile=profile),
            privileged=BackendPrivileged(backend),
        )
    finally:
        backend.close()
    rec = RecordedEpisode.load(out)
    cfg = ContextConfig(**rec.start["context"])
    history = rec.history()
    tok = _tokenizer()
    count = token_counter("smollm2")
    prompts, replies = [], []
    for t in range(1, rec.n_requests + 1):
        msgs = render(history.upto(t), cfg)
        prompts.append(
            len(
                tok(render_chat(tok, msgs, [PYTHON_TOOL_SCHEMA]), add_special_tokens=False)[
                    "input_ids"
                ]
            )
        )
        turn = history.turns[t - 1]
        replies.append(count(turn.reasoning) + sum(count(c.code) for c in turn.calls))
    prefilled = prompts[0] + sum(max(0, b - a) for a, b in zip(prompts, prompts[1:], strict=False))
    return {
        "seed": float(seed),
        "strict": float(hs.strict_success),
        "requests": float(rec.n_requests),
        "task_md": float(count(rec.start["task_md"])),
        "first_prompt": float(prompts[0]),
        "last_prompt": float(prompts[-1]),
        "prefilled": float(prefilled),
        "generated": float(sum(replies)),
    }


@functools.cache
def _tokenizer():  # noqa: ANN202 - a transformers tokenizer, loaded once per process
    from transformers import AutoTokenizer

    from captain_ros.policy.transformers_chat import smollm2_folder

    folder, gguf = smollm2_folder()
    return AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", default="0-2", help="training seeds, e.g. 0-2 or 0-29,300-311")
    p.add_argument("--profiles", default="helpers,student")
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--out", default="runs/profile_tokens")
    ns = p.parse_args(argv)
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, dict[str, float]]] = {}
    episodes: list[dict[str, object]] = []
    t0 = time.monotonic()
    for task in ns.tasks.split(","):
        for profile in ns.profiles.split(","):
            eps = [
                _episode(task, s, profile, out / f"{task}_{profile}_{s}") for s in _seeds(ns.seeds)
            ]
            episodes += [{"task": task, "profile": profile, **e} for e in eps]
            rows.setdefault(task, {})[profile] = {
                k: statistics.fmean(e[k] for e in eps) for k in eps[0] if k != "seed"
            }
            print(f"{task} {profile}: {rows[task][profile]}", file=sys.stderr)
    report = {
        "seeds": ns.seeds,
        "machine": f"{os.cpu_count()} cores",
        "wall_s": time.monotonic() - t0,
        "tokenizer": "SmolLM2-135M-Instruct (packaged GGUF), chat template with the tool schema",
        "per_task": rows,
        "episodes": episodes,
    }
    (out / "profile_tokens.json").write_text(json.dumps(report, indent=2) + "\n")
    profiles = ns.profiles.split(",")
    print(
        "| task | "
        + " | ".join(f"{p} TASK.md / last prompt / prefilled / generated" for p in profiles)
        + " | prefilled saved |"
    )
    print("|---|" + "---|" * (len(profiles) + 1))
    for task, by in rows.items():
        cells = [
            f"{by[p]['task_md']:.0f} / {by[p]['last_prompt']:.0f} / {by[p]['prefilled']:.0f} / "
            f"{by[p]['generated']:.0f}"
            for p in profiles
        ]
        saved = 1 - by[profiles[-1]]["prefilled"] / by[profiles[0]]["prefilled"]
        print(f"| {task} | " + " | ".join(cells) + f" | {saved:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
