"""The RL experiment of ``benchmarks/experiments/exp_rl_round.py`` on a CUDA machine: more rounds, the paper's
batch (64 start states x G = 4, K = 4 rounds per optimizer step), asynchronous rollouts.

Nothing is downloaded: ``--policy-folder`` is ``smollm2`` or a student folder on the machine.
Pre-flight stops with one line when there is no CUDA device or no such folder. The trainer and the
rollout workers run on the GPU (``--device cuda``; the workers' in-process transformers student
uses the GPU when the trainer does), ``--prefetch`` overlaps round k + 1's rollouts with round
k's update (rollouts one version behind, within the staleness bound of 2).

Status: prepared, dry-run on CPU only (no GPU was lent to this task). Rollouts served by vLLM:
start the server on the policy folder with runtime LoRA loading, then pass its URL:

    VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve POLICY_FOLDER --served-model-name student \
        --enable-lora --max-lora-rank 16 --max-loras 3 &
    .venv/bin/python benchmarks/experiments/gpu/exp_rl_gpu.py ... --served-url http://localhost:8000/v1

The workers then load each published policy version as the LoRA ``student-vNNNN`` and sample from
it with token ids and log-probs (``captain_ros.learn.rl.served``; tested against a fake vLLM
server over HTTP, never against a real vLLM here). Without ``--served-url`` the workers run the
in-process transformers student on the GPU.

Run: ``.venv/bin/python benchmarks/experiments/gpu/exp_rl_gpu.py --out runs/exp_rl_gpu --critic runs/critic
[--policy-folder smollm2|DIR] [--rounds 8] [--workers 4] [--dry-run]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--critic", required=True)
    ap.add_argument("--policy-folder", default="smollm2")
    ap.add_argument("--tasks", default="pick_place,stack,open_drawer")
    ap.add_argument("--starts", type=int, default=64)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--served-url", default=None, help="a vLLM server's /v1 URL (see above)")
    ap.add_argument("--dry-run", action="store_true", help="print the command, check nothing")
    ns = ap.parse_args()
    cmd = [
        sys.executable,
        "-m",
        "captain_ros.cli.main",
        "learn",
        "rl",
        "--policy-folder",
        ns.policy_folder,
        "--critic",
        ns.critic,
        "--tasks",
        ns.tasks,
        "--starts",
        str(ns.starts),
        "--group",
        str(ns.group),
        "--rounds",
        str(ns.rounds),
        "--out",
        ns.out,
        "--workers",
        str(ns.workers),
        "--device",
        "cuda",
        "--accumulation-rounds",
        "4",
        "--lr",
        str(ns.lr),
        "--prefetch",
        "--heldout-seeds",
        "1000-1019",
        "--heldout-every",
        "4",
        "--max-new-tokens",
        "512",
    ]
    if ns.served_url:
        cmd += ["--served-url", ns.served_url, "--served-model", "student"]
    if ns.dry_run:
        print(" ".join(cmd))
        return 0
    import torch

    from captain_ros.learn.models import resolve_base

    if not torch.cuda.is_available():
        print(
            "error: no CUDA device (this is the GPU variant; use benchmarks/experiments/exp_rl_round.py)",
            file=sys.stderr,
        )
        return 2
    resolve_base(ns.policy_folder)  # raises ModelError naming the problem
    rc = subprocess.call(cmd, cwd=ROOT)
    if rc == 0:
        rc = subprocess.call(
            [
                sys.executable,
                str(HERE.parent / "exp_rl_round.py"),
                "--report-only",
                "--out",
                ns.out,
                "--policy-folder",
                ns.policy_folder,
                "--json",
                str(Path(ns.out) / "result.json"),
            ],
            cwd=ROOT,
        )
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
