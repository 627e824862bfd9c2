"""The critic's input vector [x(s); t; one-hot(task)] and its normalisation (numpy).

x(s) is the 36 privileged features (tasks/features.py). The paper excludes counters of the
policy's own behaviour (perception calls, failed calls, requests) because they act as proxies for
elapsed time and move credit from grasps to perception (CaPtain section 4.5); the spec refuses
any feature name that looks like one.

[x; t] is standardised with a mean and standard deviation fixed when the critic is first trained
(warm start) and stored with it, so co-training never shifts the input scale under the ensemble
(a column constant at warm start is only centred).
The one-hot part is not standardised. An unknown task maps to an all-zero one-hot (the critic
then ranks from the physical state alone) and is counted, never silently relabelled.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.episodes import EpisodeArrays

# Substrings that mark a counter of the policy's behaviour rather than physical state.
POLICY_COUNTER = re.compile(
    r"(call|request|fail|error|perception|observe|retr|attempt|token|elapsed|turn|count|budget"
    r"|receipt|tool)",
    re.IGNORECASE,
)


def check_feature_names(names: Sequence[str]) -> None:
    """Raise unless ``names`` are distinct and none is a policy-behaviour counter."""
    bad = [n for n in names if POLICY_COUNTER.search(n)]
    if bad:
        raise InvalidArgumentError(
            f"policy-behaviour counters are not critic inputs: {', '.join(bad)}"
        )
    if len(set(names)) != len(names):
        raise InvalidArgumentError("feature names must be distinct")


@dataclass(frozen=True)
class InputSpec:
    """Feature names, task vocabulary and the fixed standardisation of [x; t].

    Attributes:
        feature_names: Names of x(s), in column order.
        tasks: Task vocabulary (one-hot order).
        mean: (F + 1,) mean of [x; t] at warm start.
        std: (F + 1,) standard deviation of [x; t] at warm start (>= 1e-6).
    """

    feature_names: tuple[str, ...]
    tasks: tuple[str, ...]
    mean: np.ndarray
    std: np.ndarray

    def __post_init__(self) -> None:
        check_feature_names(self.feature_names)
        f = len(self.feature_names) + 1
        if np.asarray(self.mean).shape != (f,) or np.asarray(self.std).shape != (f,):
            raise InvalidArgumentError(f"mean and std must have shape ({f},)")
        if not np.all(np.asarray(self.std) > 0):
            raise InvalidArgumentError("std must be positive")
        if not self.tasks or len(set(self.tasks)) != len(self.tasks):
            raise InvalidArgumentError("tasks must be a non-empty list of distinct names")

    @property
    def dim(self) -> int:
        return len(self.feature_names) + 1 + len(self.tasks)

    @classmethod
    def fit(
        cls, feature_names: Sequence[str], tasks: Sequence[str], x: np.ndarray, t: np.ndarray
    ) -> InputSpec:
        """Standardisation fitted on raw features ``x`` (N, F) and request indices ``t`` (N,)."""
        xt = np.column_stack([np.asarray(x, np.float64), np.asarray(t, np.float64)])
        std = xt.std(axis=0)
        # A column constant at warm start (the second arm on single-arm tasks) keeps scale 1, so
        # values it takes later (a dual-arm task in co-training) stay in range.
        return cls(
            tuple(feature_names),
            tuple(sorted(set(tasks))),
            xt.mean(axis=0),
            np.where(std < 1e-6, 1.0, std),
        )

    def encode(self, x: np.ndarray, t: np.ndarray, tasks: Sequence[str]) -> np.ndarray:
        """(N, dim) float32 inputs from raw features (N, F), indices (N,) and task names."""
        x = np.asarray(x, dtype=np.float64)
        t = np.asarray(t, dtype=np.float64).reshape(-1)
        if x.ndim != 2 or x.shape[1] != len(self.feature_names) or t.shape[0] != x.shape[0]:
            raise InvalidArgumentError(
                f"need features (N, {len(self.feature_names)}) and t (N,), "
                f"got {x.shape} and {t.shape}"
            )
        if len(tasks) != x.shape[0]:
            raise InvalidArgumentError("need one task name per row")
        out = np.zeros((x.shape[0], self.dim), dtype=np.float32)
        out[:, : x.shape[1] + 1] = (np.column_stack([x, t]) - self.mean) / self.std
        col = {name: i for i, name in enumerate(self.tasks)}
        for r, name in enumerate(tasks):
            j = col.get(name)
            if j is not None:
                out[r, x.shape[1] + 1 + j] = 1.0
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "feature_names": list(self.feature_names),
            "tasks": list(self.tasks),
            "mean": [float(v) for v in self.mean],
            "std": [float(v) for v in self.std],
        }

    @classmethod
    def from_dict(cls, d: dict) -> InputSpec:
        return cls(
            tuple(d["feature_names"]),
            tuple(d["tasks"]),
            np.asarray(d["mean"], np.float64),
            np.asarray(d["std"], np.float64),
        )


@dataclass(frozen=True)
class StateBatch:
    """All request states s_1 .. s_T of some episodes, flattened for training or scoring.

    Attributes:
        x: (N, F) raw features; t: (N,) request index t of each state; tasks: per row;
        y: (N,) host success of the state's episode; episode: (N,) index into the episode list.
    """

    x: np.ndarray
    t: np.ndarray
    tasks: tuple[str, ...]
    y: np.ndarray
    episode: np.ndarray


def request_states(episodes: Sequence[EpisodeArrays]) -> StateBatch:
    """Every request state (s_1 .. s_T, not the final state) of ``episodes``, labelled y_i."""
    if not episodes:
        raise InvalidArgumentError("no episodes")
    xs, ts, tasks, ys, idx = [], [], [], [], []
    for i, e in enumerate(episodes):
        n = e.n_requests
        xs.append(e.features[:n])
        ts.append(np.arange(1, n + 1))
        tasks += [e.task] * n
        ys.append(np.full(n, float(e.success)))
        idx.append(np.full(n, i))
    return StateBatch(
        np.concatenate(xs),
        np.concatenate(ts),
        tuple(tasks),
        np.concatenate(ys),
        np.concatenate(idx),
    )
