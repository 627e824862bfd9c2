"""The machine-readable summary of one episode (``summary.json``) and of an evaluation run.

:class:`EpisodeSummary` is what ``captain run`` prints and writes, and what ``captain eval``
collects per seed. :func:`aggregate` turns a list of them into the evaluation figures of the paper
(section 4, "Protocol and metrics"): host and strict success with Wilson 95% intervals, false
finishes, requests and physical actions per episode, and the per-request harness overhead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from captain_ros.evaluation.stats import describe, mcnemar, wilson_interval

OUTCOMES = ("success_with_finish", "missed_finish", "false_finish", "budget_exhausted",
            "other_failure", "error")
"""Outcome labels (harness vocabulary) plus ``error`` for an episode that crashed the runner."""


@dataclass(frozen=True)
class EpisodeSummary:
    """One episode's result.

    Attributes:
        task / seed / policy / backend: What was run.
        outcome: One of :data:`OUTCOMES`.
        host_success: The task predicate on the final state.
        strict_success: Host success and the agent called ``finish()`` (accepted).
        finished: ``finish()`` was accepted.
        false_finish: ``finish()`` was accepted on a failed state.
        requests: Policy requests made.
        physical_actions: Physical robot actions executed (budgeted calls).
        gate_rejections: ``finish()`` calls the completion gate rejected.
        wall_s: Wall time of the episode [s].
        model_s: Time spent waiting for the policy (model inference) [s].
        harness_s: Wall time outside the policy: session, robot calls, rendering [s].
        backend_s: Part of ``harness_s`` spent inside robot calls (motion, perception) [s].
        tokens_prompt / tokens_completion: Token usage reported by the policy backend.
        milestones: Fraction of the task's milestones reached at the end (0..1), if known.
        out_dir: Episode folder.
        error: Traceback text for ``outcome == "error"``.
    """

    task: str
    seed: int
    policy: str
    backend: str
    outcome: str
    host_success: bool
    strict_success: bool
    finished: bool = False
    false_finish: bool = False
    requests: int = 0
    physical_actions: int = 0
    gate_rejections: int = 0
    wall_s: float = 0.0
    model_s: float = 0.0
    harness_s: float = 0.0
    backend_s: float = 0.0
    tokens_prompt: int = 0
    tokens_completion: int = 0
    milestones: float | None = None
    out_dir: str = ""
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}; valid: {', '.join(OUTCOMES)}")

    @property
    def harness_overhead_per_request_s(self) -> float:
        """Harness time outside the backend per request [s] (session, rendering, bookkeeping)."""
        return max(0.0, self.harness_s - self.backend_s) / max(1, self.requests)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeSummary:
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in data.items() if k in names}
        extra = dict(known.pop("extra", {}) or {})
        extra.update({k: v for k, v in data.items() if k not in names})
        return cls(**known, extra=extra)

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")

    @classmethod
    def error_summary(cls, task: str, seed: int, policy: str, backend: str, error: str,
                      out_dir: str = "") -> EpisodeSummary:
        return cls(task, seed, policy, backend, "error", False, False, out_dir=out_dir,
                   error=error[-4000:])


def aggregate(episodes: Sequence[EpisodeSummary]) -> dict[str, Any]:
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
            [e.harness_overhead_per_request_s for e in episodes if e.requests]),
        "time_split_s": {"model": sum(e.model_s for e in episodes),
                         "harness": sum(e.harness_s for e in episodes),
                         "backend": sum(e.backend_s for e in episodes),
                         "requests": total_requests},
        "tokens": {"prompt": sum(e.tokens_prompt for e in episodes),
                   "completion": sum(e.tokens_completion for e in episodes)},
        "milestones_mean": (sum(e.milestones for e in episodes if e.milestones is not None)
                            / max(1, sum(e.milestones is not None for e in episodes))),
    }


def by_task(episodes: Sequence[EpisodeSummary]) -> dict[str, dict[str, Any]]:
    """:func:`aggregate` per task name (sorted)."""
    tasks = sorted({e.task for e in episodes})
    return {t: aggregate([e for e in episodes if e.task == t]) for t in tasks}


def compare(run_a: Sequence[EpisodeSummary], run_b: Sequence[EpisodeSummary],
            metric: str = "strict_success") -> dict[str, Any]:
    """Paired comparison of two runs on their common (task, seed) pairs (exact McNemar)."""
    if metric not in ("strict_success", "host_success"):
        raise ValueError("metric must be strict_success or host_success")
    a = {(e.task, e.seed): bool(getattr(e, metric)) for e in run_a}
    b = {(e.task, e.seed): bool(getattr(e, metric)) for e in run_b}
    keys = sorted(set(a) & set(b))
    test = mcnemar([a[k] for k in keys], [b[k] for k in keys])
    return {"metric": metric, "paired": len(keys), "only_in_a": len(set(a) - set(b)),
            "only_in_b": len(set(b) - set(a)),
            "rate_a": wilson_interval(sum(a[k] for k in keys), len(keys)).to_dict(),
            "rate_b": wilson_interval(sum(b[k] for k in keys), len(keys)).to_dict(),
            "mcnemar": test.to_dict()}


def load_episodes(path: str | Path) -> list[EpisodeSummary]:
    """Episodes of an evaluation (its ``eval.json``) or of a folder of episode folders."""
    p = Path(path)
    if p.is_dir():
        if (p / "eval.json").exists():
            p = p / "eval.json"
        else:
            return [EpisodeSummary.from_dict(json.loads(f.read_text()))
                    for f in sorted(p.glob("*/summary.json"))]
    data = json.loads(p.read_text())
    return [EpisodeSummary.from_dict(e) for e in data["episodes"]]
