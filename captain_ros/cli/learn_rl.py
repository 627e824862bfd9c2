"""``captain learn rl --policy-folder DIR --critic DIR --tasks T[,T2] --starts N --group 4
--rounds R --out DIR``: multi-turn RL with per-request credit from the simulator critic
(:mod:`captain_ros.learn.rl.loop`).

Prints one line per round (and live episode counts on stderr); writes ``OUT/log.jsonl``.
Bad input (unknown task, missing critic or student folder, a non-empty OUT without ``--resume``,
a resume with changed options) ends with one line on stderr and exit status 2; ``--debug`` shows
the traceback instead. Nothing heavy is imported until the command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="captain learn rl",
        description="RL of a student in the harness (CaPtain Algorithm 1): G rollouts per start "
        "state in parallel workers, per-request credit from the co-trained critic, a "
        "LoRA policy update with K-round accumulation, weights synced to the workers, "
        "a held-out monitor, checkpoint/resume.",
    )
    p.add_argument(
        "--policy-folder",
        required=True,
        help="the student (and KL reference): smollm2 or a transformers model folder",
    )
    p.add_argument("--critic", required=True, help="critic folder from `captain learn critic`")
    p.add_argument("--tasks", required=True, help="comma-separated task names")
    p.add_argument("--starts", type=int, required=True, help="start states per round (paper: 64)")
    p.add_argument("--group", type=int, default=4, help="rollouts per start state (G, paper: 4)")
    p.add_argument("--rounds", type=int, required=True, help="rounds to have run at the end")
    p.add_argument("--out", required=True, help="run folder")
    p.add_argument("--workers", type=int, default=1, help="parallel rollout processes")
    p.add_argument(
        "--ray",
        default=None,
        metavar="ADDR",
        help="run rollouts as Ray tasks (ADDR of a cluster, or `local`)",
    )
    p.add_argument("--heldout-seeds", default="", help="monitor seeds (>= 1000), e.g. 1000-1009")
    p.add_argument("--heldout-every", type=int, default=5, help="monitor every N rounds (and last)")
    p.add_argument("--resume", action="store_true", help="continue the run in OUT")
    p.add_argument("--backend", default="mujoco", choices=("mujoco", "fake"))
    p.add_argument("--seed", type=int, default=0, help="start states and sampling seeds")
    p.add_argument("--lr", type=float, default=1e-5, help="AdamW learning rate of the adapter")
    p.add_argument("--warmup-steps", type=int, default=1)
    p.add_argument("--accumulation-rounds", type=int, default=4, help="K rounds per step (4)")
    p.add_argument(
        "--max-train-requests",
        type=int,
        default=8,
        help="requests per trajectory in the policy gradient (8)",
    )
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--lora-alpha", type=int, default=32)
    p.add_argument("--max-requests", type=int, default=None, help="episode request budget")
    p.add_argument(
        "--max-physical-actions",
        type=int,
        default=None,
        help="episode action budget (default: the RL budget, 120)",
    )
    p.add_argument("--max-new-tokens", type=int, default=256, help="reply length cap")
    p.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="rollout sampling temperature (paper: 1; the update scores at the same one)",
    )
    p.add_argument("--no-early-stop", action="store_true", help="never cut rollouts early")
    p.add_argument(
        "--no-gradient-checkpointing",
        action="store_true",
        help="keep every layer's activations in the update (faster, far more memory)",
    )
    p.add_argument("--critic-lr", type=float, default=1e-4, help="co-training learning rate")
    p.add_argument(
        "--prefetch",
        action="store_true",
        help="roll out round k+1 while round k trains (one version behind)",
    )
    p.add_argument(
        "--sketch-dim",
        type=int,
        default=4096,
        help="gradient sketch size for the noise scale (0: off)",
    )
    p.add_argument("--device", default=None, help="trainer device (default: cuda when available)")
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="update/critic torch threads (0: torch's, i.e. $OMP_NUM_THREADS, else every core)",
    )
    p.add_argument("--bags", action="store_true", help="record an MCAP bag per rollout")
    p.add_argument(
        "--served-url",
        default=None,
        help="roll out through this vLLM server (runtime LoRA loading), e.g. "
        "http://localhost:8000/v1",
    )
    p.add_argument(
        "--served-model", default="student", help="the policy folder's name on that server"
    )
    p.add_argument(
        "--engine",
        choices=("transformers", "llamacpp"),
        default="transformers",
        help="what the rollout workers sample with: transformers, or llamacpp (the policy "
        "folder's GGUF plus each version's adapter as a llama.cpp GGUF; docs/engines.md)",
    )
    p.add_argument(
        "--no-progress", action="store_true", help="no live episode and update segment counts"
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    from captain_ros.core.errors import CaptainError

    try:
        from captain_ros.evaluation.runner import parse_seeds
        from captain_ros.learn.rl.loop import run_rl
        from captain_ros.learn.rl.options import RLOptions

        try:
            heldout = tuple(parse_seeds(ns.heldout_seeds)) if ns.heldout_seeds else ()
        except ValueError as exc:
            raise ValueError(f"--heldout-seeds: {exc}") from None
        opts = RLOptions(
            policy_folder=ns.policy_folder,
            critic=ns.critic,
            tasks=tuple(t.strip() for t in ns.tasks.split(",") if t.strip()),
            out=ns.out,
            starts=ns.starts,
            group=ns.group,
            rounds=ns.rounds,
            workers=ns.workers,
            ray=ns.ray,
            heldout_seeds=heldout,
            heldout_every=ns.heldout_every,
            resume=ns.resume,
            backend=ns.backend,
            seed=ns.seed,
            lr=ns.lr,
            warmup_steps=ns.warmup_steps,
            accumulation_rounds=ns.accumulation_rounds,
            max_train_requests=ns.max_train_requests,
            lora_r=ns.lora_r,
            lora_alpha=ns.lora_alpha,
            max_requests=ns.max_requests,
            max_physical_actions=ns.max_physical_actions,
            max_new_tokens=ns.max_new_tokens,
            temperature=ns.temperature,
            early_stop=not ns.no_early_stop,
            gradient_checkpointing=not ns.no_gradient_checkpointing,
            critic_lr=ns.critic_lr,
            prefetch=ns.prefetch,
            sketch_dim=ns.sketch_dim,
            device=ns.device,
            threads=ns.threads,
            bags=ns.bags,
            served_url=ns.served_url,
            served_model=ns.served_model,
            engine=ns.engine,
            progress=not ns.no_progress,
        )
        rows = run_rl(opts)
    except (CaptainError, OSError, ImportError, ValueError) as exc:
        if ns.debug:
            raise
        print(f"captain learn rl: error: {exc}", file=sys.stderr)
        return 2
    last = rows[-1] if rows else {}
    print(
        f"{len(rows)} rounds in {ns.out} (policy version {last.get('policy_version', 0)}); "
        f"log in {ns.out}/log.jsonl"
    )
    return 0
