"""``captain learn export STUDENT [--outtype q8_0] [--adapter] [--data DIR]``: the student as a GGUF
file for ``--engine llamacpp`` (``--adapter``: its LoRA adapter alone, applied to the packaged
SmolLM2 at load, what a shipped student is), checked against transformers
(:mod:`captain_ros.learn.export`).

A failed conversion or a check that does not pass ends with one line on stderr and exit status 1
(``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="captain learn export",
        description="Convert a `captain learn sft` student folder to GGUF "
        "(llama.cpp's convert_hf_to_gguf.py) and check greedy "
        "tokens and log-probs against transformers.",
    )
    p.add_argument("student", help="student folder (a merged transformers model)")
    p.add_argument("--outtype", default="q8_0", choices=("q8_0", "f16", "bf16", "f32"))
    p.add_argument(
        "--adapter",
        action="store_true",
        help="convert the LoRA adapter (STUDENT/adapter/) to adapter.f16.gguf instead, "
        "checked as the packaged SmolLM2 plus the adapter in llama.cpp",
    )
    p.add_argument(
        "--data", help="dataset rows for the check's prompts (default: one short built-in chat)"
    )
    p.add_argument("--prompts", type=int, default=3, help="recorded prompts to check")
    p.add_argument(
        "--check-tokens",
        dest="check_tokens",
        type=int,
        default=48,
        help="greedy tokens decoded per prompt",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    from captain_ros.core.errors import CaptainError

    try:
        from captain_ros.learn.export import export_adapter, export_student

        if ns.adapter:
            record = export_adapter(ns.student, ns.data, ns.prompts, ns.check_tokens)
        else:
            record = export_student(ns.student, ns.outtype, ns.data, ns.prompts, ns.check_tokens)
    except (CaptainError, OSError) as exc:
        if ns.debug:
            raise
        print(f"captain learn export: {exc}", file=sys.stderr)
        return 1
    print(
        json.dumps(
            {
                k: record[k]
                for k in (
                    "gguf",
                    "outtype",
                    "convert_s",
                    "greedy_tokens_agree",
                    "agreeing_tokens",
                    "reply_tokens",
                    "max_abs_logprob_diff",
                )
                if k in record
            }
        )
    )
    return 0
