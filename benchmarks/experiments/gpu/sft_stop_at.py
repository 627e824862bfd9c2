"""``captain learn sft`` whose run stops at step ``--stop-at`` of a longer ``--max-steps`` schedule
(the Learning I / RE-OPD parent recipe: a 60-step cosine horizon cut at step 20).

On the CPU that cut is made by resuming the checkpoint of that step (``--resume --max-steps N``).
A GPU finishes the whole horizon in seconds, and the trainer keeps only its last two checkpoints,
so there the run is stopped at the step instead (a ``TrainerCallback``), which saves the same
model: the weights after ``--stop-at`` optimizer steps of the ``--max-steps`` schedule.

Run: ``python benchmarks/experiments/gpu/sft_stop_at.py --stop-at 20 -- --data D --base smollm2 --out S
--max-steps 60 --grad-accum 1 --lr 5e-4 --eval-steps 1000 --save-steps 10 --device cuda``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def stop_callback(step: int) -> Any:
    from transformers import TrainerCallback

    class StopAt(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            if state.global_step >= step:
                control.should_training_stop = True
            return control

    return StopAt()


def main(argv: list[str] | None = None) -> int:
    from captain_ros.cli.learn_sft import build_parser, cmd_sft

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stop-at", type=int, required=True)
    p.add_argument("sft_args", nargs=argparse.REMAINDER, help="-- then `captain learn sft` options")
    ns = p.parse_args(argv)
    args = ns.sft_args[1:] if ns.sft_args[:1] == ["--"] else ns.sft_args
    a = build_parser().parse_args(args)
    if not 0 < ns.stop_at < a.max_steps:
        print("sft_stop_at: need 0 < --stop-at < --max-steps", file=sys.stderr)
        return 2
    code = cmd_sft(a, callbacks=[stop_callback(ns.stop_at)])
    if code != 0:
        return code
    steps = json.loads((Path(a.out) / "metrics.json").read_text())["steps"]
    return 0 if steps == ns.stop_at else 1


if __name__ == "__main__":
    sys.exit(main())
