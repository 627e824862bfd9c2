"""Significance allocated across every history verified in a generation (RE-0 appendix B).

Simultaneous coverage needs sum over (generation k, history h) of alpha_{k,h} <= alpha = 0.05, so
that selection by the gate does not invalidate any single bound (union bound). Each verified
(history, contract) pair is one test and draws one share:

- ``planned=N`` (the number of tests is known before verification starts): alpha / N each, and an
  (N + 1)-th request is refused;
- ``planned=None`` (open-ended): the i-th test gets alpha * 6 / (pi^2 i^2), a series that sums to
  alpha, so any number of tests stays within the budget.

Every grant is recorded (``grants``) for the admission ledger.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.errors import AlphaBudgetError

TOTAL_ALPHA = 0.05


@dataclass(frozen=True)
class AlphaGrant:
    """One test's share: its index (1-based), the level, and what it was for."""

    index: int
    alpha: float
    history_id: str
    contract_kappa: float | None


class AlphaAllocator:
    """Hands out per-test significance levels whose sum never exceeds ``total``."""

    def __init__(self, total: float = TOTAL_ALPHA, planned: int | None = None) -> None:
        if not 0.0 < total < 1.0:
            raise InvalidArgumentError(f"total alpha must be in (0, 1), got {total}")
        if planned is not None and planned < 1:
            raise InvalidArgumentError(f"planned must be >= 1, got {planned}")
        self.total = float(total)
        self.planned = planned
        self.grants: list[AlphaGrant] = []

    def level(self, index: int) -> float:
        """The level the ``index``-th test (1-based) gets."""
        if index < 1:
            raise InvalidArgumentError("test indices start at 1")
        if self.planned is not None:
            return self.total / self.planned
        return self.total * 6.0 / (math.pi**2 * index**2)

    def allocate(self, history_id: str, contract_kappa: float | None = None) -> float:
        """Grant the next test its level; raises :class:`AlphaBudgetError` past the plan."""
        i = len(self.grants) + 1
        if self.planned is not None and i > self.planned:
            raise AlphaBudgetError(
                f"all {self.planned} planned tests of this generation are "
                f"spent (total alpha {self.total}); plan more tests up front"
            )
        a = self.level(i)
        if self.spent + a > self.total * (1 + 1e-12):
            raise AlphaBudgetError(f"alpha budget {self.total} exhausted")
        self.grants.append(AlphaGrant(i, a, history_id, contract_kappa))
        return a

    @property
    def spent(self) -> float:
        return math.fsum(g.alpha for g in self.grants)
