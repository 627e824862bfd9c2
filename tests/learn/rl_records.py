"""Hand-built learning records (:class:`EpisodeLearningRecord`, the type ``load_episode_record``
returns) for the critic/credit/RL tests, which construct the records directly instead of writing
episode folders.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from captain_ros.harness.record.privileged_log import (
    EpisodeLearningRecord,
    RequestRecord,
    StateRecord,
)
from captain_ros.tasks.features import FEATURE_NAMES

RETURNS = {
    "success_with_finish": 1.0,
    "missed_finish": 0.25,
    "other_failure": 0.0,
    "budget_exhausted": -0.1,
    "false_finish": -0.3,
}
JAW = FEATURE_NAMES.index("jaw0_opening_m")
HELD = FEATURE_NAMES.index("held")


def request(
    t: int,
    *,
    physical_actions: int = 0,
    failed_physical: int = 0,
    python_error_only: bool = False,
    perception_only: bool = False,
    capabilities: tuple[str, ...] = (),
    cost: float = 0.0,
) -> RequestRecord:
    """Request t's record, plain by default (no action, no cost)."""
    return RequestRecord(
        t, physical_actions, failed_physical, python_error_only, perception_only, capabilities, cost
    )


def make_record(
    task: str = "pick_place",
    seed: int = 0,
    *,
    outcome: str = "success_with_finish",
    features: Sequence[np.ndarray] | None = None,
    held: Sequence[bool] | None = None,
    requests: Sequence[RequestRecord] | None = None,
    n_requests: int = 3,
    policy: str = "scripted",
    group: str | None = None,
    out_dir: str = "",
) -> EpisodeLearningRecord:
    """A record with T requests; features default to zeros, requests to plain motions."""
    reqs = (
        tuple(requests)
        if requests is not None
        else tuple(
            request(k + 1, physical_actions=1, capabilities=("move_to",)) for k in range(n_requests)
        )
    )
    n = len(reqs)
    feats = list(features) if features is not None else [np.zeros(36, np.float32)] * (n + 1)
    hl = list(held) if held is not None else [False] * (n + 1)
    states = tuple(
        StateRecord(
            t=k + 1,
            features=np.asarray(feats[k], np.float32),
            milestones=(),
            goals_satisfied=(),
            held=bool(hl[k]),
            ever_held=any(hl[: k + 1]),
            solved=False,
            snapshot=None,
        )
        for k in range(n + 1)
    )
    success = outcome in ("success_with_finish", "missed_finish")
    return EpisodeLearningRecord(
        task=task,
        seed=seed,
        policy=policy,
        outcome=outcome,
        host_success=success,
        strict_success=outcome == "success_with_finish",
        return_R=RETURNS[outcome],
        states=states,
        requests=reqs,
        group=group or f"{task}:{seed}",
        out_dir=out_dir,
    )


def record_from_arrays(e, seed: int = 0, out_dir: str = "") -> EpisodeLearningRecord:
    """The records.md record of a synthetic :class:`EpisodeArrays` (for loader-level tests)."""
    n = e.n_requests
    reqs = tuple(
        request(
            k + 1,
            physical_actions=int(e.physical_actions[k]),
            failed_physical=int(e.failed_physical[k]),
            python_error_only=bool(e.error_only[k]),
            perception_only=bool(e.perception_only[k]),
            capabilities=e.capabilities[k],
            cost=float(e.costs[k]),
        )
        for k in range(n)
    )
    outcome = "success_with_finish" if e.success else "other_failure"
    rec = make_record(
        task=e.task,
        seed=seed,
        outcome=outcome,
        features=list(e.features),
        held=list(e.held),
        requests=reqs,
        group=e.group,
        out_dir=out_dir,
    )
    return rec
