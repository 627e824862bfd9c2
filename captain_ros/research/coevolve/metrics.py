"""The paper's run metrics: SR, VP, EA (with lower bounds) and PAUC, plus termination labels.

Per run ``r``: success ``S_r``; ``q_r`` of ``K_r`` scene milestones certified at the final trusted
checkpoint; ``A_r`` accepted of ``T_r`` charged physical transactions, ``U_r`` of them unresolved;
``tau_rk`` the first cumulative transaction at which milestone ``k`` was certified (``None`` = never).

* ``SR = 100/n sum_r S_r``
* ``VP = 100/n sum_r q_r / K_r``
* ``EA = 100/n sum_r A_r / T_r`` over runs with ``T_r > 0`` (mean of per-run ratios, not pooled);
  unresolved outcomes stay in the denominator, so the reported value is the confirmed lower bound
  (the upper bound counts them as accepted).
* ``PAUC = 100/n sum_r (1/B) sum_{t=0}^{B-1} p_r(t)`` with ``p_r(t) = K_r^-1 sum_k 1[tau_rk <= t]``
  and ``p_r(0) = 0``: the step-function convention, so attainment exactly at ``B`` contributes zero
  area, each milestone counts once, and progress is held constant after termination until ``B``.
  Half the milestones at transaction 20 of B = 80 gives 37.5 %; at 60, 12.5 %.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from captain_ros.core.errors import InvalidArgumentError

TERMINATION_LABELS = ("success", "D", "G", "B", "C")
"""success; D payload-drop limit; G generation/repair stall; B physical budget; C conditional stop."""


@dataclass(frozen=True)
class RunOutcome:
    """The accounting of one run (all a metric needs).

    Attributes:
        success: The endpoint was verified within the budget.
        milestones_total: ``K_r``.
        milestones_final: ``q_r``: certified at the final trusted checkpoint.
        first_attainment: ``tau_rk`` per milestone (cumulative transaction index, 1-based) or None.
        accepted / charged / unresolved: ``A_r``, ``T_r``, ``U_r``.
        termination: One of :data:`TERMINATION_LABELS`.
    """

    success: bool
    milestones_total: int
    milestones_final: int
    first_attainment: tuple[int | None, ...]
    accepted: int
    charged: int
    unresolved: int = 0
    termination: str = "B"

    def __post_init__(self) -> None:
        if self.termination not in TERMINATION_LABELS:
            raise InvalidArgumentError(f"unknown termination label {self.termination!r}")
        if self.milestones_total <= 0 or not 0 <= self.milestones_final <= self.milestones_total:
            raise InvalidArgumentError("need 0 <= q_r <= K_r and K_r > 0")
        if len(self.first_attainment) != self.milestones_total:
            raise InvalidArgumentError("first_attainment needs one entry per milestone")
        if not 0 <= self.accepted + self.unresolved <= self.charged:
            raise InvalidArgumentError("need 0 <= A_r + U_r <= T_r")


def progress_at(run: RunOutcome, t: int) -> float:
    """``p_r(t)``: fraction of milestones first certified at or before transaction ``t``."""
    if t <= 0:
        return 0.0
    return (
        sum(1 for tau in run.first_attainment if tau is not None and tau <= t)
        / run.milestones_total
    )


def pauc_run(run: RunOutcome, horizon: int) -> float:
    """Progress AUC of one run over ``horizon`` transactions [%]."""
    if horizon <= 0:
        raise InvalidArgumentError("the PAUC horizon must be a positive number of transactions")
    return 100.0 * sum(progress_at(run, t) for t in range(horizon)) / horizon


@dataclass(frozen=True)
class GroupMetrics:
    """Metrics of one condition (runs weighted equally)."""

    n: int
    sr: float
    vp: float
    ea: float
    ea_upper: float
    ea_is_lower_bound: bool
    pauc: float
    horizon: int
    terminations: dict[str, int]
    mean_transactions: float

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)

    def ea_text(self) -> str:
        return ("≥" if self.ea_is_lower_bound else "") + f"{self.ea:.1f}"


def group_metrics(runs: Sequence[RunOutcome], horizon: int = 80) -> GroupMetrics:
    """SR, VP, EA and PAUC over ``runs`` with PAUC horizon ``horizon``."""
    if not runs:
        raise InvalidArgumentError("no runs to summarise")
    n = len(runs)
    charged = [r for r in runs if r.charged > 0]
    ea = 100.0 * sum(r.accepted / r.charged for r in charged) / len(charged) if charged else 0.0
    ea_hi = (
        100.0 * sum((r.accepted + r.unresolved) / r.charged for r in charged) / len(charged)
        if charged
        else 0.0
    )
    return GroupMetrics(
        n=n,
        sr=100.0 * sum(r.success for r in runs) / n,
        vp=100.0 * sum(r.milestones_final / r.milestones_total for r in runs) / n,
        ea=ea,
        ea_upper=ea_hi,
        ea_is_lower_bound=any(r.unresolved for r in charged),
        pauc=sum(pauc_run(r, horizon) for r in runs) / n,
        horizon=horizon,
        terminations=dict(Counter(r.termination for r in runs)),
        mean_transactions=sum(r.charged for r in runs) / n,
    )
