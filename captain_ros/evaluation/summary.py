"""Evaluation figures over episode records (:class:`~captain_ros.harness.record.episode_record.EpisodeRecord`).

``captain eval`` collects one record per seed; :func:`aggregate` turns a list of them into the
evaluation figures of the paper
(section 4, "Protocol and metrics"): host and strict success with Wilson 95% intervals, false
finishes, requests and physical actions per episode, and the per-request harness overhead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import SUMMARY
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.evaluation.stats import describe, mcnemar, wilson_interval
from captain_ros.harness.record.episode_record import OUTCOMES, EpisodeRecord, load_record


def aggregate(episodes: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """Evaluation figures over ``episodes`` (one task or several)."""
    n = len(episodes)
    host = wilson_interval(sum(e.host_success for e in episodes), n)
    strict = wilson_interval(sum(e.strict_success for e in episodes), n)
    false_fin = wilson_interval(sum(e.false_finish for e in episodes), n)
    finished = sum(e.finished for e in episodes)
    outcomes = {o: sum(e.outcome == o for e in episodes) for o in OUTCOMES}
    total_requests = sum(e.requests for e in episodes)
    return {
        "episodes": n,
        "host_success": host.to_dict(),
        "strict_success": strict.to_dict(),
        "false_finish": false_fin.to_dict(),
        "false_finish_share_of_finishes": (false_fin.successes / finished) if finished else 0.0,
        "outcomes": outcomes,
        "requests_per_episode": describe([e.requests for e in episodes]),
        "physical_actions_per_episode": describe([e.physical_actions for e in episodes]),
        "wall_s_per_episode": describe([e.wall_s for e in episodes]),
        "harness_overhead_per_request_s": describe(
            [e.harness_overhead_per_request_s for e in episodes if e.requests]
        ),
        "time_split_s": {
            "model": sum(e.model_s for e in episodes),
            "harness": sum(e.harness_s for e in episodes),
            "backend": sum(e.backend_s for e in episodes),
            "requests": total_requests,
        },
        "tokens": {
            "prompt": sum(e.prompt_tokens for e in episodes),
            "completion": sum(e.completion_tokens for e in episodes),
        },
        "milestones_mean": (
            sum(e.milestones for e in episodes if e.milestones is not None)
            / max(1, sum(e.milestones is not None for e in episodes))
        ),
    }


def by_task(episodes: Sequence[EpisodeRecord]) -> dict[str, dict[str, Any]]:
    """:func:`aggregate` per task name (sorted)."""
    tasks = sorted({e.task for e in episodes})
    return {t: aggregate([e for e in episodes if e.task == t]) for t in tasks}


def compare(
    run_a: Sequence[EpisodeRecord], run_b: Sequence[EpisodeRecord], metric: str = "strict_success"
) -> dict[str, Any]:
    """Paired comparison of two runs on their common (task, seed) pairs (exact McNemar)."""
    if metric not in ("strict_success", "host_success"):
        raise ValueError("metric must be strict_success or host_success")
    a = {(e.task, e.seed): bool(getattr(e, metric)) for e in run_a}
    b = {(e.task, e.seed): bool(getattr(e, metric)) for e in run_b}
    keys = sorted(set(a) & set(b))
    test = mcnemar([a[k] for k in keys], [b[k] for k in keys])
    return {
        "metric": metric,
        "paired": len(keys),
        "only_in_a": len(set(a) - set(b)),
        "only_in_b": len(set(b) - set(a)),
        "rate_a": wilson_interval(sum(a[k] for k in keys), len(keys)).to_dict(),
        "rate_b": wilson_interval(sum(b[k] for k in keys), len(keys)).to_dict(),
        "mcnemar": test.to_dict(),
    }


def load_episodes(path: str | Path) -> list[EpisodeRecord]:
    """Episodes of an evaluation (its ``eval.json``) or of a folder of episode folders.

    Raises:
        InvalidArgumentError: a folder with neither ``eval.json`` nor ``*/summary.json``.
    """
    p = Path(path)
    if p.is_dir():
        if (p / "eval.json").exists():
            p = p / "eval.json"
        else:
            found = sorted(p.glob(f"*/{SUMMARY}"))
            if not found:
                raise InvalidArgumentError(f"{p} holds no episodes (no eval.json, no */{SUMMARY})")
            return [load_record(f.parent) for f in found]
    data = json.loads(p.read_text())
    return [EpisodeRecord.from_dict(e) for e in data["episodes"]]
