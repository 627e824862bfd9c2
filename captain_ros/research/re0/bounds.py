"""RE-0's analytical confidence radius (paper eq. B.2), numpy.

For K teacher candidates drawn i.i.d. from the contract distribution and M shared-randomness pairs
per candidate, with paired return differences in [-R_bar, R_bar]:

    b = R_bar * sqrt(2 ln(2 / alpha1) / K) + R_bar * sqrt(2 ln(2 / alpha2) / M)

holds with probability at least 1 - (alpha1 + alpha2) (Hoeffding on the outer K-candidate layer
and the inner M-pair layer). LCB = Delta_hat - b.

When the teacher is deterministic (the scripted expert: a point mass over candidates) or every
pair draws its own fresh candidate, there is no separate candidate layer: the pairs are i.i.d.
with mean Delta itself and the single-layer radius R_bar * sqrt(2 ln(2 / alpha) / M) applies.
"""

from __future__ import annotations

import math

from captain_ros.core.errors import InvalidArgumentError


def _check_alpha(name: str, a: float) -> None:
    if not 0.0 < a < 1.0:
        raise InvalidArgumentError(f"{name} must be in (0, 1), got {a}")


def hoeffding_term(return_bound: float, n: int, alpha: float) -> float:
    """R_bar * sqrt(2 ln(2 / alpha) / n): one Hoeffding layer over n bounded differences."""
    _check_alpha("alpha", alpha)
    if return_bound <= 0 or not math.isfinite(return_bound):
        raise InvalidArgumentError(f"return_bound must be > 0, got {return_bound}")
    if n < 1:
        raise InvalidArgumentError(f"need at least one sample, got {n}")
    return return_bound * math.sqrt(2.0 * math.log(2.0 / alpha) / n)


def two_layer_radius(return_bound: float, k: int, m: int, alpha1: float, alpha2: float) -> float:
    """The two-layer radius b(K, M, alpha) of eq. B.2."""
    return hoeffding_term(return_bound, k, alpha1) + hoeffding_term(return_bound, m, alpha2)


def split_alpha(alpha: float) -> tuple[float, float]:
    """(alpha1, alpha2) = (alpha / 2, alpha / 2): the candidate and pair layers share the level."""
    _check_alpha("alpha", alpha)
    return alpha / 2.0, alpha / 2.0
