"""``captain learn critic --episodes RUN_DIR... --out DIR``: warm-start the simulator critic.

Reads every episode folder under the run dirs through the project's ``load_episode_record``,
splits them by start-state group (a group is never on both sides; ``--heldout-fraction`` of the
groups, chosen by a hash of the group id, are held out), trains the critic on the training
states (or continues a critic given with ``--init``), and writes the critic folder with
``metrics.json``: AUC, within-group AUC, Brier and ECE on the held-out and training states, next
to the paper's anchors. Unreadable episode folders are skipped and listed, never fatal; no
readable episode at all is an error (one line on stderr, exit 2; ``--debug`` for a traceback).

Register it in a ``captain learn`` group with :func:`add_arguments` + :func:`run`, or call
:func:`main` with the arguments after ``captain learn critic``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from captain_ros.core.errors import CaptainError

HELDOUT_SALT = "critic-heldout"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--episodes",
        nargs="+",
        required=True,
        metavar="RUN_DIR",
        help="run dirs (or episode folders) holding privileged.jsonl records",
    )
    p.add_argument("--out", required=True, help="critic folder to write")
    p.add_argument(
        "--heldout-fraction",
        type=float,
        default=0.2,
        help="share of start-state groups held out for metrics (default 0.2)",
    )
    p.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="most warm-start epochs (default 6, early-stopped on a validation split)",
    )
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--init", default=None, help="continue training this critic folder")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--json", action="store_true", help="print metrics.json instead of a summary")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def _split(episodes: Sequence[Any], fraction: float) -> tuple[list[Any], list[Any]]:
    from captain_ros.learn.critic.train import split_groups

    if not 0.0 <= fraction < 1.0:
        raise CaptainError(f"--heldout-fraction must be in [0, 1), got {fraction}")
    train, held = split_groups(episodes, fraction, HELDOUT_SALT)
    if not train:
        raise CaptainError(
            f"all {len(episodes)} episodes fell into the held-out split; "
            f"lower --heldout-fraction or add start states"
        )
    return train, held


def run(ns: argparse.Namespace, loader: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Train and write the critic folder; returns the metrics dict."""
    from captain_ros.learn.critic import Critic, WarmStartConfig, evaluate, warm_start
    from captain_ros.learn.critic.metrics import ANCHORS
    from captain_ros.learn.critic.train import set_torch_threads
    from captain_ros.learn.episodes import load_run_dirs
    from captain_ros.tasks import TASKS
    from captain_ros.tasks.features import FEATURE_NAMES

    if ns.threads:
        set_torch_threads(int(ns.threads))
    rep = load_run_dirs(ns.episodes, loader=loader)
    if not rep.episodes:
        why = f"; first: {rep.skipped[0][0]}: {rep.skipped[0][1]}" if rep.skipped else ""
        raise CaptainError(
            f"no readable episode records under {', '.join(ns.episodes)} "
            f"({len(rep.skipped)} folders skipped{why})"
        )
    width = {e.features.shape[1] for e in rep.episodes}
    if width != {len(FEATURE_NAMES)}:
        raise CaptainError(
            f"episode features have {sorted(width)} columns, the critic expects "
            f"{len(FEATURE_NAMES)} (tasks/features.py)"
        )
    train, held = _split(rep.episodes, ns.heldout_fraction)
    vocab = sorted(set(TASKS) | {e.task for e in rep.episodes})  # every task has a one-hot
    critic = (
        Critic.load(ns.init, FEATURE_NAMES)
        if ns.init
        else Critic.for_episodes(train, FEATURE_NAMES, tasks=vocab, seed=ns.seed)
    )
    cfg_kw = {
        k: v
        for k, v in (("epochs", ns.epochs), ("batch_size", ns.batch_size), ("lr", ns.lr))
        if v is not None
    }
    log = warm_start(critic, train, WarmStartConfig(seed=ns.seed, **cfg_kw))
    metrics: dict[str, Any] = _clean(
        {
            "heldout": evaluate(critic, held) if held else None,
            "train": evaluate(critic, train),
            "anchors": ANCHORS,
            "split": {
                "train_episodes": len(train),
                "heldout_episodes": len(held),
                "heldout_fraction": ns.heldout_fraction,
                "by": "start-state group",
            },
            "training": log,
            "critic_version": critic.version,
            "init": ns.init,
            "skipped": [{"folder": f, "reason": r} for f, r in rep.skipped],
            "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
    )
    out = critic.save(ns.out)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, allow_nan=False))
    return metrics


def _clean(x: Any) -> Any:
    """JSON-safe: NaN/inf become null (an AUC with one class present is undefined)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def _num(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "n/a"


def _fmt(m: dict[str, Any] | None) -> str:
    if not m:
        return "n/a (no held-out groups)"
    return (
        f"AUC {_num(m['auc'])}  within-group AUC {_num(m['within_group_auc'])}  "
        f"Brier {_num(m['brier'])}  ECE {_num(m['ece'])}  ({m['episodes']} episodes, "
        f"{m['states']} states)"
    )


def main(argv: Sequence[str] | None = None, loader: Callable[[str], Any] | None = None) -> int:
    p = argparse.ArgumentParser(prog="captain learn critic", description=__doc__.split("\n")[0])
    add_arguments(p)
    ns = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        m = run(ns, loader=loader)
    except (CaptainError, OSError) as exc:
        if ns.debug:
            raise
        print(f"captain learn critic: error: {exc}", file=sys.stderr)
        return 2
    if ns.json:
        print(json.dumps(m, indent=2))
        return 0
    if m["skipped"]:
        print(
            f"skipped {len(m['skipped'])} unreadable episode folders (listed in metrics.json)",
            file=sys.stderr,
        )
    print(f"held-out: {_fmt(m['heldout'])}")
    print(f"train:    {_fmt(m['train'])}")
    print(
        f"warm start: {m['training']['states']} states, {m['training']['epochs_run']} epochs in "
        f"{m['training']['wall_s']:.1f} s; wrote {Path(ns.out) / 'metrics.json'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
