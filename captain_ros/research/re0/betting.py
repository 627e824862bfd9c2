"""Anytime-valid betting e-process and confidence sequence for a bounded mean (numpy).

RE-0's deployed verifier uses an anytime-valid betting e-process over the paired differences
(appendix B, implementation note). This is the capital process of Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting" (JRSS-B 2024), with their predictable
plug-in bets, written here because no maintained Python package fits: ``expectation`` 0.6 needs
Python >= 3.12 (this project runs 3.11) and has no bounded-mean betting CS; ``confseq`` needs a
C++ build and was last released in 2023.

Observations d_i in [-B, B] are mapped to x_i = (d_i + B) / 2B in [0, 1]. For a candidate mean m:

    K+_t(m) = prod_{i<=t} (1 + lam+_i(m) (x_i - m)),   lam+_i(m) = min(lam_i, c / m)
    K-_t(m) = prod_{i<=t} (1 - lam-_i(m) (x_i - m)),   lam-_i(m) = min(lam_i, c / (1 - m))
    lam_i   = sqrt(2 ln(1 / alpha) / (sigma2_{i-1} * i * ln(1 + i)))
    mu_t    = (1/2 + sum_{i<=t} x_i) / (t + 1),  sigma2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1)

with c = 1/2. Under mean(x) = m both are non-negative martingales with initial value 1, so by
Ville's inequality P(exists t: K_t(m) >= 1/alpha) <= alpha. Each factor of K+ is non-increasing
in m and each factor of K- non-decreasing, so

    L_t = inf {m : K+_t(m) < 1/alpha},    U_t = sup {m : K-_t(m) < 1/alpha}

are found by a monotone grid search and are one-sided, time-uniform bounds at level alpha each (the pair is a
(1 - 2 alpha) confidence sequence; WSR's hedged capital with theta = 1/2 lies inside it). Because
coverage holds at every t at once, the running max of L and the running min of U stay valid, and
extending the sample (RE-0's 8 -> 12 -> ... -> 48 escalation) needs no correction.

The e-process for H0: mean <= null is E_t = K+_t(null); E_t >= 1/alpha exactly when the running
lower bound reaches ``null``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from captain_ros.core.errors import InvalidArgumentError

BET_TRUNCATION = 0.5
_GRID = 33
_PASSES = 10


def plugin_bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in bets lam_1 .. lam_n (lam_t uses x_1 .. x_{t-1} only)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    t = np.arange(1, n + 1, dtype=np.float64)
    mu = (0.5 + np.cumsum(x)) / (t + 1.0)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1.0)
    sigma2_prev = np.concatenate(([0.25], sigma2[:-1]))
    return np.sqrt(2.0 * math.log(1.0 / alpha) / (sigma2_prev * t * np.log1p(t)))


def log_capital_plus(
    x: np.ndarray, lam: np.ndarray, m: float, c: float = BET_TRUNCATION
) -> np.ndarray:
    """log K+_t(m) for t = 1 .. n (betting that the mean exceeds m)."""
    bets = np.minimum(lam, c / m) if m > 0 else lam
    return np.cumsum(np.log1p(bets * (np.asarray(x, np.float64) - m)))


def log_capital_minus(
    x: np.ndarray, lam: np.ndarray, m: float, c: float = BET_TRUNCATION
) -> np.ndarray:
    """log K-_t(m) for t = 1 .. n (betting that the mean is below m)."""
    bets = np.minimum(lam, c / (1.0 - m)) if m < 1 else lam
    return np.cumsum(np.log1p(-bets * (np.asarray(x, np.float64) - m)))


def _final_log_capital(
    x: np.ndarray, lam: np.ndarray, ms: np.ndarray, c: float, sign: float
) -> np.ndarray:
    """log K+_n(m) (sign +1) or log K-_n(m) (sign -1) for every m in ``ms`` at once."""
    ms = ms[None, :]
    with np.errstate(divide="ignore"):
        cap = c / ms if sign > 0 else c / (1.0 - ms)
    bets = np.minimum(lam[:, None], cap)
    return np.log1p(sign * bets * (x[:, None] - ms)).sum(axis=0)


def _crossing(x: np.ndarray, lam: np.ndarray, log_thr: float, c: float, sign: float) -> float:
    """The m where log K crosses ``log_thr``, bracketed on the rejected side.

    K+ is non-increasing in m, K- non-decreasing; each pass evaluates _GRID points and keeps the
    cell holding the crossing, so _PASSES passes pin it to _GRID ** -_PASSES.
    """
    lo, hi = 0.0, 1.0
    for _ in range(_PASSES):
        ms = np.linspace(lo, hi, _GRID)
        rejected = _final_log_capital(x, lam, ms, c, sign) >= log_thr
        if sign > 0:  # rejected for small m: keep [last rejected, first accepted]
            k = int(np.argmin(rejected)) if not rejected.all() else _GRID - 1
            if k == 0:
                return 0.0
            lo, hi = ms[k - 1], ms[k]
        else:  # rejected for large m: keep [last accepted, first rejected]
            k = int(np.argmax(rejected)) if rejected.any() else _GRID
            if k == _GRID:
                return 1.0
            if k == 0:
                return 0.0
            lo, hi = ms[k - 1], ms[k]
    return lo if sign > 0 else hi


@dataclass(frozen=True)
class BettingBounds:
    """Time-uniform bounds on the mean of d at the requested times, in d's units.

    Attributes:
        times: (k,) sample sizes t at which the bounds were computed (1-based, increasing).
        lower: (k,) running-max lower confidence bound (level alpha) over those times.
        upper: (k,) running-min upper confidence bound (level alpha) over those times.
        log_e_value: (n,) log E_t for H0: mean <= null at every t (admit when >= ln(1/alpha)).
    """

    times: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    log_e_value: np.ndarray


def betting_bounds(
    d: np.ndarray,
    bound: float,
    alpha: float,
    null: float = 0.0,
    c: float = BET_TRUNCATION,
    times: np.ndarray | None = None,
) -> BettingBounds:
    """Betting confidence sequence and e-process for the mean of ``d`` in [-bound, bound].

    ``times`` (default: every t) are the sample sizes at which the bounds are computed; looking
    only at some times (the escalation levels) is as valid as looking at all of them.
    """
    d = np.asarray(d, dtype=np.float64).ravel()
    if not 0.0 < alpha < 1.0:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha}")
    if bound <= 0 or not math.isfinite(bound):
        raise InvalidArgumentError(f"bound must be > 0, got {bound}")
    if not 0.0 < c < 1.0:
        raise InvalidArgumentError(f"the bet truncation c must be in (0, 1), got {c}")
    if d.size == 0:
        raise InvalidArgumentError("need at least one observation")
    if not np.all(np.isfinite(d)) or np.any(np.abs(d) > bound * (1 + 1e-12)):
        raise InvalidArgumentError(f"observations must be finite and within [-{bound}, {bound}]")
    if not -bound < null < bound:
        raise InvalidArgumentError(f"null must lie inside (-{bound}, {bound}), got {null}")
    ts = np.arange(1, d.size + 1) if times is None else np.unique(np.asarray(times, dtype=int))
    if ts.size == 0 or ts[0] < 1 or ts[-1] > d.size:
        raise InvalidArgumentError(f"times must lie in 1..{d.size}")
    x = np.clip((d + bound) / (2.0 * bound), 0.0, 1.0)
    lam = plugin_bets(x, alpha)
    log_thr = math.log(1.0 / alpha)
    lo = np.array([_crossing(x[:t], lam[:t], log_thr, c, +1.0) for t in ts])
    hi = np.array([_crossing(x[:t], lam[:t], log_thr, c, -1.0) for t in ts])
    m0 = (null + bound) / (2.0 * bound)
    to_d = 2.0 * bound
    return BettingBounds(
        times=ts,
        lower=np.maximum.accumulate(lo) * to_d - bound,
        upper=np.minimum.accumulate(hi) * to_d - bound,
        log_e_value=log_capital_plus(x, lam, m0, c),
    )
