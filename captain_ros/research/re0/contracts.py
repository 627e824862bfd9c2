"""Teacher repair contracts and the smallest-verified-scope selection (RE-0 section 3.2).

A contract bounds a repair: the boundary (the request index where the teacher takes over), the
API symbols the segment may use, and its maximum length in requests; kappa is its scope cost.
Contracts are verified in increasing kappa and the first one whose LCB clears the gate (and whose
Valid predicate holds) is selected: "minimal necessary repair" is the smallest *verified* scope,
not the shortest candidate string. Every verification, admitted or not, is returned for the
ledger, and each one draws its own significance level from the generation's allocator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.re0.allocation import AlphaAllocator
from captain_ros.research.re0.verify import Verification


@dataclass(frozen=True)
class RepairContract:
    """A bounded repair: where, with what, for how long, at what scope cost.

    Attributes:
        boundary_t: Request index at which the teacher segment starts (>= 1).
        allowed_symbols: API symbols the segment may call (e.g. ``("move_to", "release")``).
        max_segment_requests: Longest segment, in requests, before control returns (>= 1).
        kappa: Scope cost; see :func:`scope_cost` for the default.
    """

    boundary_t: int
    allowed_symbols: tuple[str, ...]
    max_segment_requests: int
    kappa: float

    def __post_init__(self) -> None:
        if self.boundary_t < 1:
            raise InvalidArgumentError(f"boundary_t must be >= 1, got {self.boundary_t}")
        if self.max_segment_requests < 1:
            raise InvalidArgumentError("max_segment_requests must be >= 1")
        if not self.allowed_symbols or any(
            not isinstance(s, str) or not s for s in self.allowed_symbols
        ):
            raise InvalidArgumentError("allowed_symbols must be non-empty names")
        if not self.kappa >= 0:
            raise InvalidArgumentError(f"kappa must be >= 0, got {self.kappa}")

    def to_dict(self) -> dict[str, object]:
        return {
            "boundary_t": self.boundary_t,
            "allowed_symbols": list(self.allowed_symbols),
            "max_segment_requests": self.max_segment_requests,
            "kappa": self.kappa,
        }


def scope_cost(max_segment_requests: int, n_symbols: int, n_api: int = 23) -> float:
    """Default kappa: segment length, plus the share of the API (22 capabilities + finish) used."""
    return float(max_segment_requests) + n_symbols / n_api


def order_by_scope(contracts: Iterable[RepairContract]) -> list[RepairContract]:
    """Increasing kappa; ties by shorter segment, then fewer symbols, then the symbols."""
    return sorted(
        contracts,
        key=lambda c: (c.kappa, c.max_segment_requests, len(c.allowed_symbols), c.allowed_symbols),
    )


@dataclass(frozen=True)
class Selection:
    """The selected contract (None: no contract verified) and every verification made."""

    contract: RepairContract | None
    verification: Verification | None
    audited: tuple[tuple[RepairContract, Verification], ...]


def select_smallest_verified(
    contracts: Sequence[RepairContract],
    verify: Callable[[RepairContract, float], Verification],
    allocator: AlphaAllocator,
    history_id: str,
) -> Selection:
    """Verify in increasing kappa and stop at the first admitted, valid contract.

    ``verify(contract, alpha)`` runs the paired counterfactual verification at level ``alpha``
    (drawn from ``allocator``, one share per contract tried).
    """
    audited: list[tuple[RepairContract, Verification]] = []
    for c in order_by_scope(contracts):
        alpha = allocator.allocate(history_id, c.kappa)
        v = verify(c, alpha)
        audited.append((c, v))
        if v.admitted:
            return Selection(c, v, tuple(audited))
    return Selection(None, None, tuple(audited))
