"""Statistics for evaluation runs: Wilson score intervals and the exact McNemar test.

Both are exact closed forms over counts (no sampling), so they are unit-tested against published
values:

- Wilson (1927) score interval for a binomial proportion, the interval recommended over the
  normal ("Wald") interval for small samples and rates near 0 or 1.
- Exact McNemar test for paired binary outcomes (the same seeds run by two policies): under the
  null hypothesis the discordant pairs split 50/50, so the two-sided p-value is
  ``min(1, 2 * P[Binomial(b + c, 1/2) <= min(b, c)])``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist


@dataclass(frozen=True)
class Proportion:
    """A success count with its Wilson score interval.

    Attributes:
        successes: Number of successes.
        n: Number of trials.
        rate: ``successes / n`` (0 when ``n == 0``).
        low / high: Bounds of the two-sided Wilson interval at ``confidence``.
        confidence: Coverage of the interval (0.95 by default).
    """

    successes: int
    n: int
    rate: float
    low: float
    high: float
    confidence: float = 0.95

    def to_dict(self) -> dict[str, float | int]:
        return {
            "successes": self.successes,
            "n": self.n,
            "rate": self.rate,
            "ci_low": self.low,
            "ci_high": self.high,
            "confidence": self.confidence,
        }

    def __str__(self) -> str:
        return (
            f"{self.successes}/{self.n} = {100 * self.rate:.1f}% "
            f"[{100 * self.low:.1f}, {100 * self.high:.1f}]"
        )


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Proportion:
    """Wilson score interval for ``successes`` out of ``n`` trials.

    With ``n == 0`` the interval is the whole ``[0, 1]``.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return Proportion(0, 0, 0.0, 0.0, 1.0, confidence)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)  # stdlib: no scipy in every process
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Proportion(successes, n, p, low, high, confidence)


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test of two paired binary outcome vectors.

    Attributes:
        n_pairs: Number of paired episodes (same seed under both runs).
        both: Pairs where both runs succeeded.
        only_a: Pairs where only run A succeeded (``b``).
        only_b: Pairs where only run B succeeded (``c``).
        neither: Pairs where both failed.
        p_value: Exact two-sided p-value (1.0 when there are no discordant pairs).
    """

    n_pairs: int
    both: int
    only_a: int
    only_b: int
    neither: int
    p_value: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "n_pairs": self.n_pairs,
            "both": self.both,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "neither": self.neither,
            "p_value": self.p_value,
        }


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar p-value from the two discordant counts ``b`` and ``c``."""
    if only_a < 0 or only_b < 0:
        raise ValueError("discordant counts must be non-negative")
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    # P[X <= k] for X ~ Binomial(n, 1/2), summed exactly with integers.
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2.0 * tail / 2.0**n)


def mcnemar(outcomes_a: Sequence[bool], outcomes_b: Sequence[bool]) -> McNemar:
    """Paired comparison of two runs over the same seeds (equal-length outcome vectors)."""
    if len(outcomes_a) != len(outcomes_b):
        raise ValueError(
            f"paired outcomes must have equal length ({len(outcomes_a)} vs {len(outcomes_b)})"
        )
    both = sum(1 for a, b in zip(outcomes_a, outcomes_b, strict=True) if a and b)
    only_a = sum(1 for a, b in zip(outcomes_a, outcomes_b, strict=True) if a and not b)
    only_b = sum(1 for a, b in zip(outcomes_a, outcomes_b, strict=True) if b and not a)
    neither = len(outcomes_a) - both - only_a - only_b
    return McNemar(len(outcomes_a), both, only_a, only_b, neither, mcnemar_exact_p(only_a, only_b))


def describe(values: Sequence[float]) -> dict[str, float]:
    """Mean, median, p95, min and max of a sample (zeros for an empty sample)."""
    if not values:
        return {"n": 0, "mean": 0.0, "median": 0.0, "p95": 0.0, "min": 0.0, "max": 0.0}
    xs = sorted(float(v) for v in values)
    return {
        "n": len(xs),
        "mean": sum(xs) / len(xs),
        "median": _quantile(xs, 0.5),
        "p95": _quantile(xs, 0.95),
        "min": xs[0],
        "max": xs[-1],
    }


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default method) of a sorted sample."""
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)
