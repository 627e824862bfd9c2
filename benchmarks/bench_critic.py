"""Critic training speed on this CPU: the warm-start recipe on 100k request states, against the
raw forward + backward (+ AdamW) rate of the same ensemble measured in the same run.

Issue 13's target: 100k request states trained in <= 60 s. "Trained" here is the whole default
warm-start recipe (``WarmStartConfig``: batch 1024, AdamW, bf16 autocast where native), run for
all of its 6 epochs (early stopping off: the worst case), not one epoch. The states
are synthetic (``captain_ros.learn.critic.synthetic``): speed does not depend on what the
features mean. The held-out AUC of the same run is printed as a sanity check of the recipe.

Usage: ``python benchmarks/bench_critic.py [--states 100000] [--threads 2] [--epochs 6]``
Also times one co-training round (two full-batch AdamW steps over 256 episodes' states).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import torch
import torch.nn.functional as F

from captain_ros.learn.critic import CoTrainer, Critic, WarmStartConfig, evaluate, warm_start
from captain_ros.learn.critic.model import native_bf16
from captain_ros.learn.critic.synthetic import synthetic_episodes
from captain_ros.tasks.features import FEATURE_NAMES


def raw_rate(
    critic: Critic, batch: int, steps: int, with_optimizer: bool, bf16: bool
) -> tuple[float, float]:
    """States per wall second and per CPU second of bare forward + backward (+ AdamW step) on
    one fixed batch."""
    model = critic.model
    x = torch.randn(batch, critic.spec.dim)
    y = (torch.rand(batch) < 0.5).float()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def loss_of() -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(x)
        return F.binary_cross_entropy_with_logits(out.float(), y)

    for _ in range(3):  # warm-up
        loss_of().backward()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        loss = loss_of()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if with_optimizer:
            opt.step()
    return batch * steps / (time.perf_counter() - t0), batch * steps / (time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--states", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=WarmStartConfig().epochs)
    ap.add_argument("--batch-size", type=int, default=WarmStartConfig().batch_size)
    ap.add_argument("--bf16", choices=("auto", "on", "off"), default="auto")
    ap.add_argument("--json", default=None)
    ns = ap.parse_args()
    torch.set_num_threads(ns.threads)
    groups = max(1, ns.states // (4 * 25))
    train = synthetic_episodes(groups, seed=0)
    while sum(e.n_requests for e in train) < ns.states:
        groups = int(groups * 1.05) + 1
        train = synthetic_episodes(groups, seed=0)
    held = synthetic_episodes(max(50, groups // 10), seed=1)
    n_states = sum(e.n_requests for e in train)
    critic = Critic.for_episodes(train, FEATURE_NAMES, seed=0)

    cfg = WarmStartConfig(
        epochs=ns.epochs,
        batch_size=ns.batch_size,
        patience=ns.epochs,
        bf16=None if ns.bf16 == "auto" else ns.bf16 == "on",
    )
    bf16 = native_bf16() if cfg.bf16 is None else cfg.bf16
    raw_fb, raw_fb_cpu = raw_rate(critic, ns.batch_size, 30, with_optimizer=False, bf16=bf16)
    raw_step, raw_step_cpu = raw_rate(critic, ns.batch_size, 30, with_optimizer=True, bf16=bf16)
    raw_step_fp32, _ = raw_rate(critic, ns.batch_size, 30, with_optimizer=True, bf16=False)
    critic = Critic.for_episodes(train, FEATURE_NAMES, seed=0)  # fresh weights for the recipe
    t0, c0 = time.perf_counter(), time.process_time()
    log = warm_start(critic, train, cfg)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    m = evaluate(critic, held)

    ct = CoTrainer(critic)
    rnd_eps = train[:256]
    t1 = time.perf_counter()
    rnd = ct.begin_round(rnd_eps)
    t_score = time.perf_counter() - t1
    ct.finish_round(rnd)
    t_round = time.perf_counter() - t1

    rate = log["states"] * log["epochs_run"] / wall
    rate_cpu = log["states"] * log["epochs_run"] / cpu
    res = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus",
        "threads": ns.threads,
        "states": n_states,
        "episodes": len(train),
        "epochs": ns.epochs,
        "batch_size": ns.batch_size,
        "bf16": log["bf16"],
        "train_states": log["states"],
        "val_states": log["val_states"],
        "best_epoch": log["best_epoch"],
        "warm_start_wall_s": wall,
        "warm_start_cpu_s": cpu,
        "target_s": 60.0,
        "load_avg_1m": os.getloadavg()[0],
        "trainer_states_per_cpu_s": rate_cpu,
        "raw_fwd_bwd_states_per_cpu_s": raw_fb_cpu,
        "raw_fwd_bwd_adamw_states_per_cpu_s": raw_step_cpu,
        "trainer_vs_raw_step_cpu": rate_cpu / raw_step_cpu,
        "trainer_states_per_s": rate,
        "raw_fwd_bwd_states_per_s": raw_fb,
        "raw_fwd_bwd_adamw_states_per_s": raw_step,
        "trainer_vs_raw_step": rate / raw_step,
        "raw_fwd_bwd_adamw_fp32_states_per_s": raw_step_fp32,
        "heldout_auc": m["auc"],
        "heldout_within_group_auc": m["within_group_auc"],
        "heldout_brier": m["brier"],
        "heldout_ece": m["ece"],
        "final_epoch_loss": log["epoch_loss"][-1],
        "cotrain_round_states": sum(e.n_requests for e in rnd_eps),
        "cotrain_score_s": t_score,
        "cotrain_round_s": t_round,
    }
    print(
        f"warm start: {n_states} states ({log['states']} train + {log['val_states']} val) x "
        f"{log['epochs_run']} epochs, bf16 {log['bf16']}, in {wall:.1f} s wall / {cpu:.1f} s CPU "
        f"(target <= 60 s) = {rate:,.0f} states/s ({rate_cpu:,.0f} per CPU s); best epoch "
        f"{log['best_epoch']}; load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"raw ensemble (same precision) fwd+bwd: {raw_fb:,.0f} states/s; fwd+bwd+AdamW: "
        f"{raw_step:,.0f} states/s (fp32: {raw_step_fp32:,.0f}); per CPU s {raw_fb_cpu:,.0f} / "
        f"{raw_step_cpu:,.0f}; trainer at {rate_cpu / raw_step_cpu:.0%} of the raw step rate "
        f"(CPU time)"
    )
    print(
        f"held-out (synthetic) AUC {m['auc']:.3f}, within-group {m['within_group_auc']:.3f}, "
        f"Brier {m['brier']:.3f}, ECE {m['ece']:.3f}"
    )
    print(
        f"co-training round of 256 episodes ({res['cotrain_round_states']} states): scoring "
        f"{t_score * 1e3:.0f} ms, scoring + 2 AdamW steps {t_round * 1e3:.0f} ms"
    )
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
