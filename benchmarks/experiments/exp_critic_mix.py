"""Issue 13's critic figures and credit analysis on recorded episodes of the policy mix.

Reads the run dirs through the project's ``load_episode_record``, holds out start-state groups
(the same split as ``captain learn critic``), warm-starts the critic on the rest, and reports on
the held-out episodes, next to the paper's anchors:

- AUC, within-group AUC, Brier, ECE (CaPtain 0.970 / 0.904 / ECE 0.006; warm start 0.907 AUC,
  Brier 0.075);
- the share of |A| on motion / grasp / release / perception-only requests (65 / 14 / 14 / 1.3 %)
  and the median dV of successful grasps, failed grasps and perception-only requests
  (+0.058 / -0.0075 / -0.0002), with the held-out critic's values and the group advantages.

The issue asks for >= 1,000 episodes of the mix (scripted expert with faults + SFT student +
clean expert); fewer are run but flagged. Usage:
``python benchmarks/experiments/exp_critic_mix.py --episodes RUN_DIR... [--heldout-fraction 0.2] [--json OUT]``
(``--synthetic GROUPS`` instead of ``--episodes`` runs the same pipeline on the synthetic rule.)
``--probe RUN_DIR...``: episodes the critic is only scored on, never trained on (e.g. the SFT
student's RL rollouts): the same figures, and the mean V of their first and last request states
by outcome.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch

from captain_ros.cli.learn_critic import HELDOUT_SALT
from captain_ros.learn.credit import RunningStd, credit_analysis, round_credit
from captain_ros.learn.critic import Critic, WarmStartConfig, evaluate, warm_start
from captain_ros.learn.critic.metrics import ANCHORS
from captain_ros.learn.critic.synthetic import synthetic_episodes
from captain_ros.learn.critic.train import split_groups
from captain_ros.learn.episodes import load_run_dirs
from captain_ros.tasks.features import FEATURE_NAMES


def terminal_share(episodes: list, deltas: dict) -> dict:
    """The last request's share of the |delta| mass, and the kinds of those last requests."""
    from captain_ros.learn.credit.analysis import classify_requests

    last: dict[str, float] = {}
    total = 0.0
    for ep in episodes:
        d = np.abs(np.asarray(deltas[ep.episode_id], dtype=np.float64))
        kind = classify_requests(ep, FEATURE_NAMES).kinds[-1]
        last[kind] = last.get(kind, 0.0) + float(d[-1])
        total += float(d.sum())
    end = sum(last.values())
    return {
        "share": end / total if total else 0.0,
        "kinds": {k: v / end for k, v in last.items()} if end else {},
    }


def probe_figures(critic: Critic, run_dirs: list[str]) -> dict:
    """The critic's figures on episodes it never trained on, and V by outcome."""
    rep = load_run_dirs(run_dirs)
    eps = list(rep.episodes)
    if not eps:
        return {"episodes": 0, "skipped": [list(s) for s in rep.skipped]}
    by: dict[str, list[tuple[float, float]]] = {}
    values = critic.episode_values(eps)
    for ep in eps:
        vals = np.asarray(values[ep.episode_id].v_t, dtype=np.float64)
        by.setdefault("success" if ep.success else "failure", []).append(
            (float(vals[0]), float(vals[-1]))
        )
    return {
        "episodes": len(eps),
        "successes": sum(bool(ep.success) for ep in eps),
        "metrics": evaluate(critic, eps),
        "mean_v": {
            k: {
                "first": float(np.mean([a for a, _ in p])),
                "last": float(np.mean([b for _, b in p])),
                "n": len(p),
            }
            for k, p in sorted(by.items())
        },
        "skipped": [list(s) for s in rep.skipped],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--episodes", nargs="+")
    src.add_argument(
        "--synthetic",
        type=int,
        metavar="GROUPS",
        help="dry run on the synthetic rule (GROUPS start states x 4), not the mix",
    )
    ap.add_argument("--heldout-fraction", type=float, default=0.2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--probe",
        nargs="+",
        default=[],
        help="run dirs scored with the held-out critic but never trained on",
    )
    ap.add_argument("--json", default=None)
    ns = ap.parse_args()
    torch.set_num_threads(ns.threads)
    if ns.synthetic:
        eps, skipped = synthetic_episodes(ns.synthetic, seed=0), []
    else:
        rep = load_run_dirs(ns.episodes)
        eps, skipped = list(rep.episodes), [list(s) for s in rep.skipped]
    if len(eps) < 1000:
        print(
            f"warning: {len(eps)} episodes; the issue asks for >= 1,000 of the mix", file=sys.stderr
        )
    train, held = split_groups(eps, ns.heldout_fraction, HELDOUT_SALT)
    if not train or not held:
        print("error: need episodes on both sides of the group split", file=sys.stderr)
        return 2
    critic = Critic.for_episodes(train, FEATURE_NAMES)
    log = warm_start(critic, train, WarmStartConfig())
    m = evaluate(critic, held)
    values = critic.episode_values(held)
    credits = round_credit(held, values, RunningStd())
    ca = credit_analysis(held, values, {c.episode_id: c.advantages for c in credits}, FEATURE_NAMES)
    # The full A adds the group outcome term to every request of an episode alike, so its |A|
    # shares follow the request counts; the critic's own part (A_GAE minus its episode mean)
    # shows where the critic puts the credit.
    ca_gae = credit_analysis(
        held, values, {c.episode_id: c.gae - c.gae.mean() for c in credits}, FEATURE_NAMES
    )
    ca_td = credit_analysis(held, values, {c.episode_id: c.deltas for c in credits}, FEATURE_NAMES)
    probe = probe_figures(critic, ns.probe) if ns.probe else None
    n_req = sum(ca["requests"].values())
    terminal = terminal_share(held, {c.episode_id: c.deltas for c in credits})
    print(
        f"{len(train)} training / {len(held)} held-out episodes ({len(skipped)} skipped); "
        f"warm start {log['wall_s']:.1f} s"
    )
    for k in ("auc", "within_group_auc", "brier", "ece"):
        print(f"  {k:<17} {m[k]:.3f}   anchor {ANCHORS.get(k, ANCHORS.get('warm_start_' + k))}")
    print(
        "  |A| share by request kind: full A / A_GAE - episode mean / one-step |delta| / "
        "share of requests"
    )
    for k, v in ca["abs_advantage_share"].items():
        anchor = ca["anchors"]["abs_advantage_share"].get(k)
        g = ca_gae["abs_advantage_share"][k]
        shown = "n/a" if v is None else f"{100 * v:.1f} %"
        shown_g = "n/a" if g is None else f"{100 * g:.1f} %"
        d = ca_td["abs_advantage_share"][k]
        shown_d = "n/a" if d is None else f"{100 * d:.1f} %"
        print(
            f"  |A| share {k:<11} {shown:>8} / {shown_g:>7} / {shown_d:>7} / "
            f"{100 * ca['requests'][k] / max(1, n_req):.1f} %   anchor "
            f"{'-' if anchor is None else f'{100 * anchor:.1f} %'}"
        )
    print(
        f"  terminal delta_T: {100 * terminal['share']:.1f} % of the |delta| mass, on "
        + ", ".join(f"{k} {100 * v:.0f} %" for k, v in terminal["kinds"].items())
    )
    for k, v in ca["median_delta_v"].items():
        shown = "n/a" if v is None else f"{v:+.4f}"
        print(
            f"  median dV {k:<14} {shown:>8}   anchor "
            f"{ca['anchors']['median_delta_v'][k]:+.4f} (n = {ca['n_delta_v'][k]})"
        )
    if probe:
        pm = probe["metrics"]
        print(
            f"  probe ({probe['episodes']} episodes, {probe['successes']} successes): "
            + ", ".join(f"{k} {pm[k]:.3f}" for k in ("auc", "within_group_auc", "brier", "ece"))
            + "; mean V first/last state: "
            + ", ".join(
                f"{k} {v['first']:.3f}/{v['last']:.3f} (n = {v['n']})"
                for k, v in probe["mean_v"].items()
            )
        )
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(
                {
                    "metrics": m,
                    "credit": ca,
                    "credit_critic_part": ca_gae,
                    "credit_td": ca_td,
                    "terminal_delta": terminal,
                    "training": log,
                    "probe": probe,
                    "skipped": skipped,
                    "synthetic": bool(ns.synthetic),
                },
                f,
                indent=2,
                default=str,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
