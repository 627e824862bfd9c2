"""Hand-built episode records (the records.md dataclasses) for the critic/credit/RL tests.

The lead's loader is the only reader of episode folders; these tests construct the records
directly, exactly as records.md describes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from captain_ros.tasks.features import FEATURE_NAMES

RETURNS = {"success_with_finish": 1.0, "missed_finish": 0.25, "other_failure": 0.0,
           "budget_exhausted": -0.1, "false_finish": -0.3}
JAW = FEATURE_NAMES.index("jaw0_opening_m")
HELD = FEATURE_NAMES.index("held")


@dataclass(frozen=True)
class StateRecord:
    t: int
    features: np.ndarray
    milestones: tuple[bool, ...] = ()
    goals_satisfied: tuple[bool, ...] = ()
    held: bool = False
    ever_held: bool = False
    solved: bool = False
    snapshot: str | None = None


@dataclass(frozen=True)
class RequestRecord:
    t: int
    physical_actions: int = 0
    failed_physical: int = 0
    python_error_only: bool = False
    perception_only: bool = False
    capabilities: tuple[str, ...] = ()
    cost: float = 0.0


@dataclass(frozen=True)
class EpisodeRecord:
    task: str
    seed: int
    policy: str
    outcome: str
    host_success: bool
    strict_success: bool
    return_R: float
    states: tuple[StateRecord, ...]
    requests: tuple[RequestRecord, ...]
    group: str
    out_dir: str = ""
    extra: dict = field(default_factory=dict)


def make_record(task: str = "pick_place", seed: int = 0, *, outcome: str = "success_with_finish",
                features: Sequence[np.ndarray] | None = None, held: Sequence[bool] | None = None,
                requests: Sequence[RequestRecord] | None = None, n_requests: int = 3,
                policy: str = "scripted", group: str | None = None, out_dir: str = "") -> EpisodeRecord:
    """A record with T requests; features default to zeros, requests to plain motions."""
    reqs = tuple(requests) if requests is not None else tuple(
        RequestRecord(t=k + 1, physical_actions=1, capabilities=("move_to",))
        for k in range(n_requests))
    n = len(reqs)
    feats = list(features) if features is not None else [np.zeros(36, np.float32)] * (n + 1)
    hl = list(held) if held is not None else [False] * (n + 1)
    states = tuple(StateRecord(t=k + 1, features=np.asarray(feats[k], np.float32), held=bool(hl[k]),
                               ever_held=any(hl[:k + 1]))
                   for k in range(n + 1))
    success = outcome in ("success_with_finish", "missed_finish")
    return EpisodeRecord(task=task, seed=seed, policy=policy, outcome=outcome,
                         host_success=success, strict_success=outcome == "success_with_finish",
                         return_R=RETURNS[outcome], states=states, requests=reqs,
                         group=group or f"{task}:{seed}", out_dir=out_dir)


def record_from_arrays(e, seed: int = 0, out_dir: str = "") -> EpisodeRecord:
    """The records.md record of a synthetic :class:`EpisodeArrays` (for loader-level tests)."""
    n = e.n_requests
    reqs = tuple(RequestRecord(t=k + 1, physical_actions=int(e.physical_actions[k]),
                               failed_physical=int(e.failed_physical[k]),
                               python_error_only=bool(e.error_only[k]),
                               perception_only=bool(e.perception_only[k]),
                               capabilities=e.capabilities[k], cost=float(e.costs[k]))
                 for k in range(n))
    outcome = "success_with_finish" if e.success else "other_failure"
    rec = make_record(task=e.task, seed=seed, outcome=outcome, features=list(e.features),
                      held=list(e.held), requests=reqs, group=e.group, out_dir=out_dir)
    return rec
