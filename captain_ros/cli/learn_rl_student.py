"""``captain learn rl-student SFT_STUDENT RL_VERSION --out DIR``: an RL policy version as a student
folder (the SFT adapter and the RL adapter stacked into one, exactly, plus the merged model), which
``captain learn export --adapter`` packages and ``captain eval`` runs like any SFT student
(:mod:`captain_ros.learn.rl.student`).

Bad folders end with one line on stderr and exit status 1 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="captain learn rl-student",
        description="Stack an RL version's LoRA adapter onto its SFT student's adapter "
        "(peft's exact `cat` combination) and write the result as a student folder.",
    )
    p.add_argument("sft", help="the `captain learn sft` student the RL run started from")
    p.add_argument(
        "adapter", help="an RL version (RUN/policy/vNNNN) or an RL checkpoint's adapter folder"
    )
    p.add_argument("--out", required=True, help="the new student folder")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    from captain_ros.core.errors import CaptainError

    try:
        from captain_ros.learn.rl.student import rl_student

        out = rl_student(ns.sft, ns.adapter, ns.out)
    except (CaptainError, OSError) as exc:
        if ns.debug:
            raise
        print(f"captain learn rl-student: {exc}", file=sys.stderr)
        return 1
    rl = json.loads((out / "sft_config.json").read_text())["rl"]
    print(json.dumps({"out": str(out), "version": rl["version"], "rank": rl["stacked_rank"]}))
    return 0
