"""The credit analysis of CaPtain section 4.5, computed from episode records (numpy).

Two figures, next to the paper's anchors:
- the share of the total |A| mass on motion / grasp / release / perception-only requests
  (anchor 65 / 14 / 14 / 1.3 %);
- the median one-step dV = V(s_{t+1}, t) - V(s_t, t) of successful grasps, failed grasps and
  perception-only requests (anchor +0.058 / -0.0075 / -0.0002).

Request kinds, first match wins, read from the privileged states and the request record:
- ``grasp``: a request with physical actions that starts without holding and either ends holding
  (a successful grasp) or closes a jaw by at least ``JAW_CLOSE_M`` (a failed grasp, if it ends
  without holding). The record names the capabilities but not their arguments, so a grasp is
  recognised by its effect on the jaw features, not by ``move_to(jaw="close")``;
- ``release``: starts holding and ends not holding, or calls ``release``;
- ``motion``: any other request with physical actions;
- ``perception``: no physical action, only perception calls;
- ``other``: the rest (Python errors only, ``finish`` only, pure computation).
dV is not defined for the last request (its delta uses the return), so medians use t < T.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.credit.advantage import EpisodeValues
from captain_ros.learn.episodes import EpisodeArrays

KINDS = ("motion", "grasp", "release", "perception", "other")
JAW_CLOSE_M = 0.005
JAW_FEATURES = ("jaw0_opening_m", "jaw1_opening_m")
ANCHOR_SHARES = {"motion": 0.65, "grasp": 0.14, "release": 0.14, "perception": 0.013}
ANCHOR_MEDIAN_DV = {"grasp_success": 0.058, "grasp_failed": -0.0075, "perception": -0.0002}


@dataclass(frozen=True)
class RequestKinds:
    """Per request of one episode: its kind and, for grasps, whether it succeeded."""

    kinds: tuple[str, ...]
    grasp_success: np.ndarray  # (T,) bool, meaningful where kind == "grasp"


def classify_requests(ep: EpisodeArrays, feature_names: Sequence[str]) -> RequestKinds:
    """The kind of every request of ``ep`` (see the module docstring)."""
    idx = [list(feature_names).index(n) for n in JAW_FEATURES if n in feature_names]
    if not idx:
        raise InvalidArgumentError(f"feature names lack the jaw features {JAW_FEATURES}")
    jaw = ep.features[:, idx].astype(np.float64)
    closed = np.any(jaw[1:] - jaw[:-1] <= -JAW_CLOSE_M, axis=1)
    held0, held1 = ep.held[:-1], ep.held[1:]
    kinds, success = [], np.zeros(ep.n_requests, dtype=bool)
    for k in range(ep.n_requests):
        physical = ep.physical_actions[k] > 0
        if physical and not held0[k] and (held1[k] or closed[k]):
            kinds.append("grasp")
            success[k] = bool(held1[k])
        elif (held0[k] and not held1[k]) or "release" in ep.capabilities[k]:
            kinds.append("release")
        elif physical:
            kinds.append("motion")
        elif ep.perception_only[k]:
            kinds.append("perception")
        else:
            kinds.append("other")
    return RequestKinds(tuple(kinds), success)


def _median(x: list[float]) -> float | None:
    return float(np.median(x)) if x else None


def _iqr(x: list[float]) -> list[float] | None:
    return [float(np.percentile(x, 25)), float(np.percentile(x, 75))] if x else None


def credit_analysis(
    episodes: Sequence[EpisodeArrays],
    values: Mapping[str, EpisodeValues],
    advantages: Mapping[str, np.ndarray],
    feature_names: Sequence[str],
) -> dict[str, object]:
    """|A| shares per request kind and median dV per grasp outcome / perception, as a dict."""
    mass = dict.fromkeys(KINDS, 0.0)
    count = dict.fromkeys(KINDS, 0)
    dv: dict[str, list[float]] = {"grasp_success": [], "grasp_failed": [], "perception": []}
    for ep in episodes:
        a = np.abs(np.asarray(advantages[ep.episode_id], dtype=np.float64))
        if a.shape != (ep.n_requests,):
            raise InvalidArgumentError(f"{ep.episode_id}: need {ep.n_requests} advantages")
        rk = classify_requests(ep, feature_names)
        d = values[ep.episode_id].delta_v
        for k, kind in enumerate(rk.kinds):
            mass[kind] += float(a[k])
            count[kind] += 1
            if k >= ep.n_requests - 1:
                continue
            if kind == "grasp":
                dv["grasp_success" if rk.grasp_success[k] else "grasp_failed"].append(float(d[k]))
            elif kind == "perception":
                dv["perception"].append(float(d[k]))
    total = sum(mass.values())
    return {
        "episodes": len(episodes),
        "requests": count,
        "abs_advantage_share": {k: (mass[k] / total if total > 0 else None) for k in KINDS},
        "median_delta_v": {k: _median(v) for k, v in dv.items()},
        "iqr_delta_v_grasp_success": _iqr(dv["grasp_success"]),
        "n_delta_v": {k: len(v) for k, v in dv.items()},
        "anchors": {"abs_advantage_share": ANCHOR_SHARES, "median_delta_v": ANCHOR_MEDIAN_DV},
    }
