"""``captain learn sft --data DIR --base smollm2|PATH --out DIR [options]``: fine-tune a student
(:mod:`captain_ros.learn.sft`).

Bad input (a dataset without rows, a malformed row, an unknown base, an output folder holding
someone else's checkpoints) ends with one line on stderr and exit status 2; ``--debug`` shows the
traceback instead. Nothing heavy is imported until the command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="captain learn sft",
        description="Fine-tune a base model on `captain learn dataset` rows "
        "(assistant-only labels, per-turn weights) and save a student "
        "folder for `captain run --policy transformers`.",
    )
    p.add_argument("--data", required=True, help="dataset folder (*.jsonl rows) or one .jsonl file")
    p.add_argument(
        "--base",
        default="smollm2",
        help="smollm2 (packaged SmolLM2-135M-Instruct) or a transformers model folder",
    )
    p.add_argument("--out", required=True, help="output folder (the student, checkpoints, logs)")
    p.add_argument("--method", default="lora", choices=("lora", "full"))
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--lora-alpha", type=int, default=32)
    p.add_argument("--lora-dropout", type=float, default=0.05)
    p.add_argument("--epochs", type=float, default=1.5)
    p.add_argument(
        "--init-adapter",
        default=None,
        help="start the LoRA from this adapter folder's weights (a fresh optimizer and schedule: "
        "a continuation on new data), e.g. a checkpoint of an earlier run",
    )
    p.add_argument("--max-steps", type=int, default=-1, help="optimizer steps (overrides --epochs)")
    p.add_argument(
        "--lr",
        type=float,
        default=None,
        help="learning rate (default 2e-4 for LoRA, 2e-5 for full)",
    )
    p.add_argument("--batch-size", type=int, default=1, help="sequences per micro-batch")
    p.add_argument("--grad-accum", type=int, default=4, help="micro-batches per optimizer step")
    p.add_argument("--pack-tokens", type=int, default=0, help="pack sequences in rows of N tokens")
    p.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="tokens per sequence (default: the model's context)",
    )
    p.add_argument(
        "--bf16",
        default="auto",
        choices=("auto", "on", "off"),
        help="bf16 autocast (auto: where the device computes bf16 natively)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-steps", type=int, default=25)
    p.add_argument("--save-steps", type=int, default=25)
    p.add_argument(
        "--val-fraction",
        type=float,
        default=0.05,
        help="episodes held out for validation when the data has no val split",
    )
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint in OUT")
    p.add_argument(
        "--gradient-checkpointing",
        default="auto",
        choices=("auto", "on", "off"),
        help="recompute activations in the backward pass (auto: for sequences longer "
        "than 4096 tokens)",
    )
    p.add_argument("--device", default=None, help="cpu | cuda (default: cuda when available)")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: torch's, i.e. $OMP_NUM_THREADS, else every core)",
    )
    p.add_argument("--no-adapter", action="store_true", help="do not also save the LoRA adapter")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return cmd_sft(build_parser().parse_args(argv))


def cmd_sft(ns: argparse.Namespace, callbacks: Sequence[Any] = ()) -> int:
    """Run ``ns`` (:func:`build_parser`'s options); ``callbacks``: extra
    ``transformers.TrainerCallback`` objects (``benchmarks/experiments/gpu/sft_stop_at.py`` cuts a schedule)."""
    from captain_ros.core.errors import CaptainError

    try:
        from captain_ros.learn.sft import SftOptions, run_sft

        opts = SftOptions(
            data=ns.data,
            base=ns.base,
            out=ns.out,
            method=ns.method,
            lora_r=ns.lora_r,
            lora_alpha=ns.lora_alpha,
            lora_dropout=ns.lora_dropout,
            init_adapter=ns.init_adapter,
            epochs=ns.epochs,
            max_steps=ns.max_steps,
            learning_rate=ns.lr,
            batch_size=ns.batch_size,
            grad_accum=ns.grad_accum,
            pack_tokens=ns.pack_tokens,
            max_length=ns.max_length,
            bf16=ns.bf16,
            seed=ns.seed,
            eval_steps=ns.eval_steps,
            save_steps=ns.save_steps,
            val_fraction=ns.val_fraction,
            resume=ns.resume,
            gradient_checkpointing=ns.gradient_checkpointing,
            device=ns.device,
            threads=ns.threads,
            save_adapter=not ns.no_adapter,
            progress=not ns.no_progress,
        )
        metrics = run_sft(opts, callbacks)
    except (CaptainError, OSError, ImportError) as exc:
        if ns.debug:
            raise
        print(f"captain learn sft: error: {exc}", file=sys.stderr)
        return 2
    if ns.resume and not metrics["resumed_from"]:
        print(
            f"captain learn sft: note: no checkpoint in {ns.out}/checkpoints; trained from the "
            "start",
            file=sys.stderr,
        )
    ev = f", validation loss {metrics['eval_loss']:.4f}" if "eval_loss" in metrics else ""
    print(
        f"trained {metrics['steps']} steps in {metrics['train_s']:.0f} s "
        f"({metrics['tokens_per_s']:.0f} tokens/s), train loss {metrics['train_loss']:.4f}{ev}; "
        f"student in {ns.out}"
    )
    return 0
