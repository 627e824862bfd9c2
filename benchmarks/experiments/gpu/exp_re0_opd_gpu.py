"""``benchmarks/experiments/exp_re0_opd.py`` on a CUDA machine: the student's replies, its SFT and every
distillation on the GPU (bf16), at the scale the CPU run cannot afford.

Nothing is downloaded: ``--base`` is ``smollm2`` (packaged) or a local model folder. Pre-flight
stops with one line when there is no CUDA device or no bf16. Then the CPU script runs with
``--device cuda --bf16 on`` and the given arguments.

Run: ``.venv/bin/python benchmarks/experiments/gpu/exp_re0_opd_gpu.py --run runs/exp_re0_opd_gpu --task
pick_place --expert-seeds 0-3 --seeds 100-199 --heldout 1000-1049 --workers 4 --sft-steps 300
--max-steps 150``. Status: prepared; not run on a GPU (none was used by this session).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import exp_re0_opd  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    import torch

    args = list(sys.argv[1:] if argv is None else argv)
    if not torch.cuda.is_available():
        print("exp_re0_opd_gpu: no CUDA device", file=sys.stderr)
        return 2
    if not torch.cuda.is_bf16_supported():
        print("exp_re0_opd_gpu: this GPU has no bf16", file=sys.stderr)
        return 2
    return exp_re0_opd.main([*args, "--device", "cuda", "--bf16", "on"])


if __name__ == "__main__":
    sys.exit(main())
