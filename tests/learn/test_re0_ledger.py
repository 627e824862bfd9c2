"""The admission ledger's schema: written entries read back, broken ones refused by line."""

import copy
import json

import pytest

from captain_ros.learn.errors import LedgerError
from captain_ros.research.re0 import (
    LedgerWriter,
    PairedDraw,
    RepairContract,
    VerifierConfig,
    invalid_verification,
    ledger_entry,
    read_ledger,
    validate_entry,
    verify,
)

CONTRACT = RepairContract(
    boundary_t=4, allowed_symbols=("move_to", "release"), max_segment_requests=2, kappa=2.1
)
EVIDENCE = [{"source": "unrealized_effect", "t": 4, "detail": "grasp without holding"}]


def _entry(event_id="e1", teacher=1.0, method="betting"):
    cfg = VerifierConfig(method=method)
    v = verify(
        lambda f, n: [PairedDraw("c0", xi, teacher, 0.0) for xi in range(f, f + n)], 0.01, cfg
    )
    return ledger_entry(
        event_id=event_id,
        generation=0,
        history_id="restack:3:student:t4",
        task="restack",
        seed=3,
        evidence=EVIDENCE,
        contract=CONTRACT,
        candidates=[{"id": "c0", "code_sha256": "ab" * 32}],
        verification=v,
        return_bound=1.0,
    )


def test_entries_round_trip_through_the_jsonl_ledger(tmp_path):
    path = tmp_path / "ledger.jsonl"
    w = LedgerWriter(path)
    entries = [_entry("e1"), _entry("e2", teacher=0.0), _entry("e3", method="hoeffding")]
    for e in entries:
        w.append(e)
    back = read_ledger(path)
    assert [b["event_id"] for b in back] == ["e1", "e2", "e3"]
    assert back[0]["verdict"] == "admitted" and back[1]["verdict"] == "insufficient"
    assert back[0]["pairs"][0] == {
        "candidate": "c0",
        "xi": 0,
        "teacher_return": 1.0,
        "student_return": 0.0,
    }
    assert back[2]["radius"] > 0 and back[0]["radius"] is None
    assert back[0]["rollouts_spent"] == 2 * len(back[0]["pairs"])
    for key in (
        "history_id",
        "evidence",
        "contract",
        "candidates",
        "pairs",
        "delta_hat",
        "radius",
        "lcb",
        "verdict",
        "rollouts_spent",
    ):
        assert key in back[0]


def test_invalid_events_are_recorded_with_their_reason(tmp_path):
    v = invalid_verification("python session could not be rehydrated", 0.01, VerifierConfig())
    e = ledger_entry(
        event_id="e9",
        generation=1,
        history_id="h",
        task="stack",
        seed=1,
        evidence=EVIDENCE,
        contract=CONTRACT,
        candidates=[],
        verification=v,
        return_bound=1.0,
    )
    assert e["verdict"] == "invalid" and e["delta_hat"] is None and not e["valid"]
    json.dumps(e, allow_nan=False)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda e: e.pop("lcb"), "missing field 'lcb'"),
        (lambda e: e.update(verdict="admitted", lcb=-0.5), "disagrees"),
        (lambda e: e.update(delta_hat=e["delta_hat"] + 0.3), "post-selected"),
        (lambda e: e.update(rollouts_spent=3), "rollouts_spent"),
        (lambda e: e.update(schema="re0-ledger/0"), "schema"),
        (
            lambda e: e["pairs"].append(
                {"candidate": "zz", "xi": 99, "teacher_return": 1.0, "student_return": 0.0}
            ),
            "listed candidate",
        ),
        (lambda e: e.update(evidence=[{"source": "vibes", "t": 1, "detail": ""}]), "evidence"),
        (lambda e: e.update(valid=False), "Valid predicate"),
        (lambda e: e.update(generation=True), "bool"),
    ],
)
def test_broken_entries_are_refused(edit, message):
    e = copy.deepcopy(_entry())
    edit(e)
    with pytest.raises(LedgerError, match=message):
        validate_entry(e)


def test_post_selecting_the_best_candidate_fails_validation():
    cfg = VerifierConfig(candidates="reused")

    def pairs(f, n):
        return [
            d
            for xi in range(f, f + n)
            for d in (PairedDraw("good", xi, 1.0, 0.0), PairedDraw("bad", xi, 0.0, 0.0))
        ]

    v = verify(pairs, 0.01, cfg)
    e = ledger_entry(
        event_id="e",
        generation=0,
        history_id="h",
        task="t",
        seed=0,
        evidence=EVIDENCE,
        contract=CONTRACT,
        candidates=[{"id": "good", "code_sha256": "1"}, {"id": "bad", "code_sha256": "2"}],
        verification=v,
        return_bound=1.0,
    )
    assert e["delta_hat"] == pytest.approx(0.5)
    e["delta_hat"] = 1.0  # the good candidate alone
    with pytest.raises(LedgerError, match="post-selected"):
        validate_entry(e)


def test_reader_names_the_bad_line(tmp_path):
    path = tmp_path / "ledger.jsonl"
    good = json.dumps(_entry("e1"))
    path.write_text(good + "\n\nnot json\n")
    with pytest.raises(LedgerError, match=r"ledger.jsonl:3: not JSON"):
        read_ledger(path)
    path.write_text(good + "\n" + good + "\n")
    with pytest.raises(LedgerError, match=r":2: duplicate event_id"):
        read_ledger(path)
    with pytest.raises(LedgerError, match="cannot read ledger"):
        read_ledger(tmp_path / "missing.jsonl")
