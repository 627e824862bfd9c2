"""Per-request credit of CaPtain (paper eqs. 5-6 and 9-10, appendix A.2), in numpy.

For episode i with requests t = 1 .. T and critic V:

    delta_t = c_t + V(s_{t+1}, t) - V(s_t, t)        (t < T)   -- the SAME index t in both terms
    delta_T = c_T + R_i - V(s_T, T)
    A^GAE_t = sum_{k >= 0} lambda^k delta_{t+k}      lambda = 0.9, no discount
    A_{i,t} = (G_i - mean_group G) + (A^GAE_{i,t} - mean_t A^GAE_{i,t}),   G_i = R_i + sum_t c_{i,t}

then divided by a running estimate of the advantage standard deviation without re-centering. A
request whose cells only produced Python errors gets no positive credit, plus a small penalty.

The paper gives no value for that penalty; :data:`ERROR_ONLY_PENALTY` is this project's choice,
0.1 in units of the running standard deviation (applied after the division, so its size relative
to real credit does not drift with the return scale).

Index convention: arrays are 0-based, position k holds request t = k + 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.episodes import EpisodeArrays

GAE_LAMBDA = 0.9
GROUP_SIZE = 4
ERROR_ONLY_PENALTY = 0.1


@dataclass(frozen=True)
class EpisodeValues:
    """The critic's values one episode's credit needs.

    Attributes:
        v_t: (T,) V(s_t, t) for t = 1 .. T.
        v_next: (T - 1,) V(s_{t+1}, t) for t = 1 .. T - 1 (next state, SAME index t).
        critic_version: Version of the critic that produced them (co-training order check).
    """

    v_t: np.ndarray
    v_next: np.ndarray
    critic_version: int = 0

    def __post_init__(self) -> None:
        v, vn = np.asarray(self.v_t, float), np.asarray(self.v_next, float)
        if v.ndim != 1 or v.size < 1 or vn.shape != (v.size - 1,):
            raise InvalidArgumentError(
                f"v_t must be (T,) and v_next (T-1,), got {v.shape}, {vn.shape}"
            )
        if not (np.all(np.isfinite(v)) and np.all(np.isfinite(vn))):
            raise InvalidArgumentError("critic values must be finite")

    @property
    def delta_v(self) -> np.ndarray:
        """(T - 1,) the one-step change V(s_{t+1}, t) - V(s_t, t), without the cost."""
        return np.asarray(self.v_next, float) - np.asarray(self.v_t, float)[:-1]


def td_deltas(
    v_t: np.ndarray, v_next: np.ndarray, costs: np.ndarray, return_R: float
) -> np.ndarray:
    """delta_t of eq. 5: (T,) from V(s_t, t), V(s_{t+1}, t), c_t and the terminal return R."""
    v_t, v_next, costs = (np.asarray(a, dtype=np.float64) for a in (v_t, v_next, costs))
    n = v_t.size
    if costs.shape != (n,) or v_next.shape != (n - 1,):
        raise InvalidArgumentError(
            f"need v_t ({n},), v_next ({n - 1},), costs ({n},); got "
            f"{v_t.shape}, {v_next.shape}, {costs.shape}"
        )
    nxt = np.append(v_next, float(return_R))
    return costs + nxt - v_t


def gae(deltas: np.ndarray, lam: float = GAE_LAMBDA) -> np.ndarray:
    """A^GAE_t = sum_k lam^k delta_{t+k} with no discount (gamma = 1)."""
    if not 0.0 <= lam <= 1.0:
        raise InvalidArgumentError(f"lambda must be in [0, 1], got {lam}")
    d = np.asarray(deltas, dtype=np.float64)
    out = np.empty_like(d)
    acc = 0.0
    for k in range(d.size - 1, -1, -1):
        acc = d[k] + lam * acc
        out[k] = acc
    return out


def group_advantages(
    returns_G: Sequence[float], gae_values: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Eq. 6 for the rollouts of one start state: outcome term + centred GAE term, per episode."""
    g = np.asarray(returns_G, dtype=np.float64)
    if g.ndim != 1 or g.size != len(gae_values) or g.size == 0:
        raise InvalidArgumentError("need one return G per episode of the group")
    g_mean = float(g.mean())
    return [
        (g[i] - g_mean) + (np.asarray(a, float) - float(np.mean(a)))
        for i, a in enumerate(gae_values)
    ]


class RunningStd:
    """Running standard deviation of all advantages seen so far (Chan/Welford merge).

    The population variance over every value passed to :meth:`update`; :meth:`scale` divides by
    it without subtracting the mean (the paper: "without re-centering"). ``eps`` guards the very
    first round of identical values.
    """

    def __init__(self, eps: float = 1e-8) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.eps = float(eps)

    def update(self, values: np.ndarray) -> None:
        x = np.asarray(values, dtype=np.float64).ravel()
        if x.size == 0:
            return
        if not np.all(np.isfinite(x)):
            raise InvalidArgumentError("advantages must be finite")
        n_b, mean_b = x.size, float(x.mean())
        m2_b = float(((x - mean_b) ** 2).sum())
        n = self.count + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta * delta * self.count * n_b / n
        self.count = n

    @property
    def std(self) -> float:
        return float(np.sqrt(self.m2 / self.count)) if self.count else 1.0

    def scale(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=np.float64) / max(self.std, self.eps)

    def state_dict(self) -> dict[str, float]:
        return {"count": self.count, "mean": self.mean, "m2": self.m2, "eps": self.eps}

    @classmethod
    def from_state_dict(cls, d: Mapping[str, float]) -> RunningStd:
        r = cls(eps=float(d.get("eps", 1e-8)))
        r.count, r.mean, r.m2 = int(d["count"]), float(d["mean"]), float(d["m2"])
        return r


def apply_error_only_rule(
    adv: np.ndarray, error_only: np.ndarray, penalty: float = ERROR_ONLY_PENALTY
) -> np.ndarray:
    """No positive credit for Python-error-only requests, plus ``-penalty`` (penalty >= 0)."""
    if penalty < 0:
        raise InvalidArgumentError(f"penalty must be >= 0, got {penalty}")
    a = np.asarray(adv, dtype=np.float64).copy()
    m = np.asarray(error_only, dtype=bool)
    a[m] = np.minimum(a[m], 0.0) - penalty
    return a


@dataclass(frozen=True)
class EpisodeCredit:
    """Credit of one episode: deltas, GAE, raw group advantage and the final (scaled) one."""

    episode_id: str
    deltas: np.ndarray
    gae: np.ndarray
    raw: np.ndarray
    advantages: np.ndarray
    critic_version: int

    def by_request(self) -> dict[int, float]:
        """{t: A_t} for t = 1 .. T, the form the policy update takes."""
        return {k + 1: float(a) for k, a in enumerate(self.advantages)}


def round_credit(
    episodes: Sequence[EpisodeArrays],
    values: Mapping[str, EpisodeValues],
    running_std: RunningStd,
    *,
    lam: float = GAE_LAMBDA,
    error_penalty: float = ERROR_ONLY_PENALTY,
) -> list[EpisodeCredit]:
    """The advantages of one round, in the order of ``episodes``.

    ``values`` maps episode id to that episode's critic values; they must all come from the same
    critic version (the one from BEFORE the round's co-training update). The round's raw
    advantages update ``running_std`` first, then every advantage is divided by it.
    """
    versions = {values[e.episode_id].critic_version for e in episodes if e.episode_id in values}
    missing = [e.episode_id for e in episodes if e.episode_id not in values]
    if missing:
        raise InvalidArgumentError(
            f"no critic values for {len(missing)} episodes, e.g. {missing[0]}"
        )
    if len(versions) > 1:
        raise InvalidArgumentError(
            f"a round's values must come from one critic version, got {sorted(versions)}"
        )
    deltas, gaes = {}, {}
    for e in episodes:
        v = values[e.episode_id]
        if v.v_t.size != e.n_requests:
            raise InvalidArgumentError(
                f"{e.episode_id}: {e.n_requests} requests but {v.v_t.size} values"
            )
        deltas[e.episode_id] = td_deltas(v.v_t, v.v_next, e.costs, e.return_R)
        gaes[e.episode_id] = gae(deltas[e.episode_id], lam)
    groups: dict[str, list[EpisodeArrays]] = {}
    for e in episodes:
        groups.setdefault(e.group, []).append(e)
    raw: dict[str, np.ndarray] = {}
    for members in groups.values():
        adv = group_advantages(
            [m.episode_return for m in members], [gaes[m.episode_id] for m in members]
        )
        raw.update({m.episode_id: a for m, a in zip(members, adv, strict=True)})
    running_std.update(np.concatenate([raw[e.episode_id] for e in episodes]))
    out = []
    for e in episodes:
        final = apply_error_only_rule(
            running_std.scale(raw[e.episode_id]), e.error_only, error_penalty
        )
        out.append(
            EpisodeCredit(
                e.episode_id,
                deltas[e.episode_id],
                gaes[e.episode_id],
                raw[e.episode_id],
                final,
                values[e.episode_id].critic_version,
            )
        )
    return out
