"""Alpha allocation, contract ordering and selection, RE-OPD weights and abstention."""

import math

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.errors import AlphaBudgetError
from captain_ros.research.re0 import (
    AdmittedEvent,
    AlphaAllocator,
    RepairContract,
    TurnSource,
    VerifierConfig,
    gate_state,
    invalid_verification,
    keep_cold_trajectory,
    order_by_scope,
    refine_or_abstain,
    reopd_weights,
    scope_cost,
    select_smallest_verified,
)
from captain_ros.research.re0.verify import Verification


def test_planned_allocation_splits_alpha_evenly_and_refuses_more():
    a = AlphaAllocator(0.05, planned=4)
    levels = [a.allocate(f"h{i}") for i in range(4)]
    assert levels == [0.0125] * 4 and a.spent == pytest.approx(0.05)
    with pytest.raises(AlphaBudgetError):
        a.allocate("h5")


def test_open_ended_allocation_is_a_convergent_series_below_alpha():
    a = AlphaAllocator(0.05)
    # alpha * 6 / (pi^2 i^2): 0.030396, 0.007599, 0.003377, ...
    assert a.allocate("h1") == pytest.approx(0.05 * 6 / math.pi**2)
    assert a.allocate("h2") == pytest.approx(0.05 * 6 / (4 * math.pi**2))
    for i in range(3, 2001):
        a.allocate(f"h{i}")
    assert a.spent < 0.05
    assert [g.index for g in a.grants[:3]] == [1, 2, 3] and a.grants[0].history_id == "h1"
    with pytest.raises(InvalidArgumentError):
        AlphaAllocator(0.0)


def _contract(kappa, seg=1, syms=("move_to",)):
    return RepairContract(boundary_t=4, allowed_symbols=syms, max_segment_requests=seg, kappa=kappa)


def _verdict(verdict, lcb, valid=True):
    return Verification(
        verdict=verdict,
        alpha=0.01,
        method="betting",
        candidates_mode="fresh",
        draws=(),
        delta_hat=lcb + 0.1,
        lcb=lcb,
        ucb=lcb + 0.2,
        radius=None,
        log_e_value=None,
        looks=(8,),
        rollouts_spent=16,
        valid=valid,
    )


def test_contracts_verified_in_increasing_kappa_and_smallest_verified_selected():
    cs = [_contract(3.0, 3), _contract(1.0), _contract(2.0, 2)]
    assert [c.kappa for c in order_by_scope(cs)] == [1.0, 2.0, 3.0]
    tried = []

    def verify(c, alpha):
        tried.append((c.kappa, alpha))
        return _verdict("admitted", 0.2) if c.kappa >= 2 else _verdict("insufficient", -0.1)

    alloc = AlphaAllocator(0.05, planned=10)
    sel = select_smallest_verified(cs, verify, alloc, "restack:3:t4")
    assert sel.contract.kappa == 2.0 and sel.verification.admitted
    assert tried == [(1.0, 0.005), (2.0, 0.005)]  # kappa 3 never ran
    assert len(sel.audited) == 2 and len(alloc.grants) == 2


def test_invalid_events_are_never_selected():
    cfg = VerifierConfig()
    sel = select_smallest_verified(
        [_contract(1.0)],
        lambda c, a: invalid_verification("snapshot mismatch", a, cfg),
        AlphaAllocator(),
        "h",
    )
    assert sel.contract is None and sel.audited[0][1].verdict == "invalid"
    sel = select_smallest_verified(
        [_contract(1.0)], lambda c, a: _verdict("admitted", 0.3, False), AlphaAllocator(), "h"
    )
    assert sel.contract is None


def test_contract_validation_and_default_scope_cost():
    assert scope_cost(2, 3) == pytest.approx(2 + 3 / 23)
    for bad in [
        dict(boundary_t=0),
        dict(max_segment_requests=0),
        dict(allowed_symbols=()),
        dict(kappa=-1.0),
    ]:
        kw = dict(boundary_t=1, allowed_symbols=("move_to",), max_segment_requests=1, kappa=1.0)
        kw.update(bad)
        with pytest.raises(InvalidArgumentError):
            RepairContract(**kw)


def test_reopd_weights_by_hand():
    turns = [
        TurnSource("seat"),
        TurnSource("seat"),
        TurnSource("repair", "e1"),
        TurnSource("seat"),
        TurnSource("repair", "e2"),
        TurnSource("repair", "e3"),
    ]
    events = {
        "e1": AdmittedEvent("e1", lcb=0.3, admitted=True),
        "e2": AdmittedEvent("e2", lcb=0.4, admitted=False),
        "e3": AdmittedEvent("e3", lcb=-0.1, admitted=True, g=0.5),
    }
    # seat: 1 (retention) ; e1: 0.5 * 1 * 0.3 ; e2 not admitted: 0 ; e3: [LCB]+ = 0
    assert reopd_weights(turns, events, lam=0.5) == pytest.approx([1, 1, 0.15, 1, 0, 0])
    with pytest.raises(InvalidArgumentError):
        reopd_weights([TurnSource("repair", "nope")], events)
    with pytest.raises(InvalidArgumentError):
        TurnSource("repair")
    assert AdmittedEvent.from_ledger(
        {"event_id": "x", "lcb": 0.2, "verdict": "admitted", "valid": True}
    ).admitted


def test_cold_corpus_keeps_only_verified_completed_trajectories():
    events = {"e1": AdmittedEvent("e1", 0.3, True), "e2": AdmittedEvent("e2", 0.3, False)}
    seat_only = [TurnSource("seat")]
    assert keep_cold_trajectory(True, seat_only + [TurnSource("repair", "e1")], events)
    assert not keep_cold_trajectory(True, seat_only + [TurnSource("repair", "e2")], events)
    assert not keep_cold_trajectory(False, seat_only, events)


def test_abstention_rules():
    assert not refine_or_abstain("stack", 0.8).refine
    assert "abstained" in refine_or_abstain("stack", 0.92).reason
    assert refine_or_abstain("restack", 0.62).refine
    closed = gate_state(
        [{"verdict": "rejected", "valid": True}, {"verdict": "insufficient", "valid": True}]
    )
    assert not closed.open and closed.n_audited == 2 and "closed" in closed.reason
    opened = gate_state([{"verdict": "admitted", "valid": True}, {"verdict": "rejected"}])
    assert opened.open and opened.n_admitted == 1
    assert not gate_state([]).open
    with pytest.raises(InvalidArgumentError):
        refine_or_abstain("x", 1.2)
