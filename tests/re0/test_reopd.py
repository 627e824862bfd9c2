"""RE-OPD: the loss weights (retention vs admitted teacher turns, [LCB]+ clipped at 0), the
corpora's keep rules, rows that Learning I's ``load_rows`` reads unchanged, and abstention."""

from __future__ import annotations

import json

import pytest
from re0_helpers import record

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.rows import load_rows
from captain_ros.research.re0.allocation import AlphaAllocator
from captain_ros.research.re0.corpus import keep_row, trajectory_rows, turn_sources
from captain_ros.research.re0.ledger import LedgerWriter
from captain_ros.research.re0.loop import LoopConfig, run_pass
from captain_ros.research.re0.opd import AdmittedEvent, TurnSource, refine_or_abstain, reopd_weights

ADMITTED = AdmittedEvent("e1", lcb=0.25, admitted=True)
REJECTED = AdmittedEvent("e2", lcb=-0.4, admitted=False)


def test_seat_turns_get_retention_and_admitted_repairs_lambda_lcb():
    turns = [
        TurnSource("seat"),
        TurnSource("repair", "e1"),
        TurnSource("repair", "e1"),
        TurnSource("seat"),
    ]
    events = {"e1": ADMITTED}
    assert reopd_weights(turns, events) == [1.0, 0.25, 0.25, 1.0]
    assert reopd_weights(turns, events, lam=2.0, retention=0.5) == [0.5, 0.5, 0.5, 0.5]
    assert reopd_weights(turns, events, lam=0.0) == [1.0, 0.0, 0.0, 1.0]


def test_lcb_is_clipped_at_zero_and_rejected_repairs_weigh_nothing():
    odd = AdmittedEvent("e3", lcb=-0.1, admitted=True)  # [LCB]+ = 0 whatever the verdict says
    turns = [TurnSource("repair", "e2"), TurnSource("repair", "e3"), TurnSource("seat")]
    assert reopd_weights(turns, {"e2": REJECTED, "e3": odd}) == [0.0, 0.0, 1.0]
    assert reopd_weights([TurnSource("repair", "e2")], {"e2": AdmittedEvent("e2", 0.3, False)}) == [
        0.0
    ]
    with pytest.raises(InvalidArgumentError, match="unknown event"):
        reopd_weights([TurnSource("repair", "nope")], {})
    with pytest.raises(InvalidArgumentError, match=">= 0"):
        reopd_weights(turns, {"e2": REJECTED, "e3": odd}, retention=-1)
    assert AdmittedEvent.from_ledger(
        {"event_id": "x", "lcb": None, "verdict": "admitted", "valid": True}
    ).lcb == float("-inf")


def test_keep_rules_of_the_cold_and_refine_corpora():
    seat = [TurnSource("seat")] * 3
    repaired = [TurnSource("seat"), TurnSource("repair", "e1"), TurnSource("seat")]
    unverified = [TurnSource("seat"), TurnSource("repair", "e2"), TurnSource("seat")]
    ev = {"e1": ADMITTED, "e2": REJECTED}
    assert keep_row("cold", True, seat, ev) and keep_row("cold", True, repaired, ev)
    assert not keep_row("cold", False, seat, ev) and not keep_row("cold", True, unverified, ev)
    assert keep_row(
        "refine", False, repaired, ev
    )  # refine keeps mu's admitted repair, even unfinished
    assert not keep_row("refine", True, seat, ev) and not keep_row("refine", True, unverified, ev)
    assert [
        s.source for s in turn_sources([{"t": 2, "source": "repair", "event_id": "e1"}], 3)
    ] == ["seat", "repair", "seat"]
    with pytest.raises(ValueError, match="unknown corpus"):
        keep_row("pooled", True, seat, ev)


def test_rows_of_a_recorded_episode_load_unchanged_with_their_weights(tmp_path):
    rec = record(tmp_path / "ep")  # the scripted expert on the fake rig, pick_place seed 3
    rec.backend.close()
    n = rec.rec.n_requests
    sources = [
        TurnSource("repair", "e1") if t in (3, 4) else TurnSource("seat") for t in range(1, n + 1)
    ]
    rows = trajectory_rows(
        tmp_path / "ep", sources, {"e1": ADMITTED}, "cold", lam=0.5, retention=0.9
    )
    (row,) = rows  # one whole-episode row: the rendered history is append-only
    want = [0.9] * n
    want[2] = want[3] = 0.125
    assert row["weights"] == pytest.approx(want) and row["requests"] == list(range(1, n + 1))
    assert row["context_sha256"] == [r["context_sha256"] for r in rec.rec.requests]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "corpus.jsonl").write_text(json.dumps(row) + "\n")
    (loaded,) = load_rows(tmp_path / "data")
    assert list(loaded.weights) == pytest.approx(want) and loaded.split == "train"
    assert len(loaded.assistant_indices) == n
    with pytest.raises(ValueError, match="turn sources"):
        trajectory_rows(tmp_path / "ep", sources[:-1], {"e1": ADMITTED}, "cold")


def test_a_task_at_rho_is_not_refined_and_the_pass_says_so(tmp_path):
    assert not refine_or_abstain("t", 0.8).refine and refine_or_abstain("t", 0.79).refine
    cfg = LoopConfig(
        task="pick_place",
        seeds=(3,),
        student="scripted-faulty:place_offset=0",
        out=str(tmp_path / "g"),
        workers=1,
        noise=None,
        backend="fake",
    )
    res = run_pass(
        cfg,
        cfg.student,
        "refine",
        AlphaAllocator(0.05, planned=None),
        LedgerWriter(tmp_path / "g" / "ledger.jsonl"),
    )
    assert res.report["abstained"] and res.report["decision"].startswith("abstained: success 100%")
    assert "events" not in res.report and not res.entries and not res.hybrid
