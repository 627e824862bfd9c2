"""The SFT experiment of ``benchmarks/experiments/exp_sft_pick_place.py`` on a CUDA machine (bf16, a larger
local base model), plus the trainer-throughput benchmark there.

Nothing is downloaded: ``--base`` is a transformers model folder already on the machine (e.g. an
instruct model of 0.5-4B parameters copied next to the checkout). Pre-flight checks stop with one
line when there is no CUDA device, no bf16, or no such base folder. Then:

1. ``bench_sft.py --device cuda --bf16 on`` on the base (trainer vs raw step, same run);
2. the experiment stages with ``learn sft --device cuda --bf16 on --method full`` (the paper
   fine-tunes all language-model weights; ``--method lora`` is the fallback when memory is short),
   16 whole-episode sequences of up to 32768 tokens per optimizer step (``--batch-size 1
   --grad-accum 16``, the paper's 16 packed rows; a padding-free batch of several long sequences
   would need a materialised block mask under sdpa), and the evaluation policy on the GPU
   (``captain eval --policy transformers --device cuda``, one worker per GPU), against the same
   base zero-shot.

Run: ``.venv/bin/python benchmarks/experiments/gpu/exp_sft_pick_place_gpu.py --run runs/exp_sft_gpu
--base /models/Qwen2.5-1.5B-Instruct [--method full|lora] [--stages ...] [--dry-run]``.
Status: prepared and dry-run on CPU; not yet run on a GPU (none was lent to this task).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import exp_sft_pick_place as exp  # noqa: E402


def preflight(base: str, dry: bool) -> None:
    import torch

    from captain_ros.learn.models import resolve_base

    resolve_base(base)  # raises ModelError naming the problem
    if dry:
        return
    if not torch.cuda.is_available():
        raise SystemExit(
            "no CUDA device: run benchmarks/experiments/exp_sft_pick_place.py on CPU instead"
        )
    if not torch.cuda.is_bf16_supported():
        raise SystemExit("this GPU has no bf16: pass --bf16 off through the sft options")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--base", required=True, help="a local transformers model folder")
    ap.add_argument("--method", default="full", choices=("full", "lora"))
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--heldout", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4, help="collection workers (CPU, MuJoCo)")
    ap.add_argument("--max-new-tokens", type=int, default=1024)
    ap.add_argument("--stages", default="bench," + ",".join(exp.STAGES))
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    preflight(a.base, a.dry_run)
    stages = a.stages.split(",")
    if "bench" in stages:
        cmd = [
            sys.executable,
            str(HERE.parents[1] / "bench_sft.py"),
            "--base",
            a.base,
            "--device",
            "cuda",
            "--bf16",
            "on",
            "--seq-len",
            "8192",
            "--method",
            a.method,
            "--json",
            str(Path(a.run) / "bench_sft_gpu.json"),
        ]
        print("$ " + " ".join(cmd), flush=True)
        if not a.dry_run:
            Path(a.run).mkdir(parents=True, exist_ok=True)
            subprocess.run(cmd, check=True)
    ns = argparse.Namespace(
        run=a.run,
        episodes=a.episodes,
        heldout=a.heldout,
        workers=a.workers,
        base=a.base,
        max_new_tokens=a.max_new_tokens,
        eval_args=["--device", "cuda"],
        sft_args=[
            "--device",
            "cuda",
            "--bf16",
            "on",
            "--method",
            a.method,
            "--batch-size",
            "1",
            "--grad-accum",
            "16",
            "--max-length",
            "32768",
        ],
    )
    cmds = exp.stage_commands(ns)
    # one model per GPU: evaluate with a single worker; the zero-shot baseline is this base
    for c in cmds["eval"]:
        c[c.index("--workers") + 1] = "1"
    cmds["eval"][1][-2:-2] = ["--model-folder", a.base]
    for stage in stages:
        if stage == "bench":
            continue
        if stage == "report":
            if not a.dry_run:
                exp.report(Path(a.run))
        elif a.dry_run or not exp.done(stage, Path(a.run)):
            for c in cmds[stage]:
                exp.run(c, a.dry_run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
