"""Held-out figures of the critic (numpy): AUC, within-group AUC, Brier score, calibration error.

All are computed over request states, each labelled with its episode's host success:
- ``auc``: probability that a state of a successful episode scores above one of a failed episode
  (Mann-Whitney U, ties count 1/2);
- ``within_group_auc``: the same, counting only pairs of states from episodes that share a start
  state (a group), pooled over groups: ranks rollouts of the same start against each other, which
  the start state's difficulty cannot explain (the paper's 0.904);
- ``brier``: mean squared error of V against y;
- ``ece``: expected calibration error over ``n_bins`` equal-width bins of V (10 by default; the
  paper does not state its binning), the state-weighted mean |mean V - mean y| per bin.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from captain_ros.core.errors import InvalidArgumentError

ANCHORS = {
    "auc": 0.970,
    "within_group_auc": 0.904,
    "ece": 0.006,
    "warm_start_auc": 0.907,
    "warm_start_brier": 0.075,
}


def _check(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s, y = np.asarray(scores, np.float64).ravel(), np.asarray(labels).ravel().astype(bool)
    if s.shape != y.shape:
        raise InvalidArgumentError(f"scores {s.shape} and labels {y.shape} differ")
    if not np.all(np.isfinite(s)):
        raise InvalidArgumentError("scores must be finite")
    return s, y


def _u_statistic(s: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    """(number of correctly ordered positive/negative pairs, ties 1/2; number of pairs)."""
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.0, 0
    r = rankdata(s)
    return float(r[y].sum() - n_pos * (n_pos + 1) / 2.0), n_pos * n_neg


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC; NaN when one class is missing."""
    s, y = _check(scores, labels)
    u, pairs = _u_statistic(s, y)
    return u / pairs if pairs else float("nan")


def within_group_auc(
    scores: np.ndarray, labels: np.ndarray, groups: Sequence[str]
) -> tuple[float, int, int]:
    """(pooled within-group AUC, groups with both outcomes, pairs used); NaN if none."""
    s, y = _check(scores, labels)
    g = np.asarray(groups)
    if g.shape != s.shape:
        raise InvalidArgumentError("need one group id per score")
    total_u, total_pairs, used = 0.0, 0, 0
    for gid in np.unique(g):
        m = g == gid
        u, pairs = _u_statistic(s[m], y[m])
        if pairs:
            total_u += u
            total_pairs += pairs
            used += 1
    return (total_u / total_pairs if total_pairs else float("nan")), used, total_pairs


def brier(probs: np.ndarray, labels: np.ndarray) -> float:
    p, y = _check(probs, labels)
    return float(np.mean((p - y) ** 2)) if p.size else float("nan")


def ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10) -> float:
    """Expected calibration error with equal-width bins [0, 0.1), ..., [0.9, 1]."""
    p, y = _check(probs, labels)
    if n_bins < 1:
        raise InvalidArgumentError("n_bins must be >= 1")
    if p.size == 0:
        return float("nan")
    b = np.minimum((np.clip(p, 0.0, 1.0) * n_bins).astype(int), n_bins - 1)
    err = 0.0
    for k in range(n_bins):
        m = b == k
        if m.any():
            err += m.sum() / p.size * abs(float(p[m].mean()) - float(y[m].mean()))
    return float(err)


def critic_metrics(
    probs: np.ndarray, labels: np.ndarray, groups: Sequence[str], n_episodes: int
) -> dict[str, float | int]:
    """The metrics.json figures for one split."""
    w_auc, w_groups, w_pairs = within_group_auc(probs, labels, groups)
    y = np.asarray(labels, bool)
    return {
        "auc": auc(probs, labels),
        "within_group_auc": w_auc,
        "brier": brier(probs, labels),
        "ece": ece(probs, labels),
        "states": int(y.size),
        "episodes": int(n_episodes),
        "positive_state_rate": float(y.mean()) if y.size else float("nan"),
        "groups_with_both_outcomes": w_groups,
        "within_group_pairs": w_pairs,
    }
