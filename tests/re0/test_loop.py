"""One RE-0 generation from one command: collect, locate, contracts, verify, ledger, mu, corpus."""

from __future__ import annotations

import json

import pytest

from captain_ros.cli.learn_re0 import main as re0_main
from captain_ros.learn.re0 import read_ledger
from captain_ros.learn.re0.generation import DistillConfig, run_loop
from captain_ros.learn.re0.locate import Located
from captain_ros.learn.re0.loop import API, LoopConfig, contract_ladder
from captain_ros.learn.re0.rollouts import release_points


def test_contracts_grow_in_scope():
    loc = Located(5, (), "x", (5,), ("move_to", "release"))
    ladder = contract_ladder(loc, (4, 1, 2))
    assert [c.max_segment_requests for c in ladder] == [1, 2, 4]
    assert ladder[0].allowed_symbols == ("move_to", "release", "finish") and ladder[1].allowed_symbols == API
    assert [c.kappa for c in ladder] == sorted(c.kappa for c in ladder) and {c.boundary_t for c in ladder} == {5}


@pytest.mark.parametrize(("args", "why"), [
    (["--student", "runs/nope"], "expected a model folder"),
    (["--student", "re0-faulty", "--teacher", "openai"], "openai"),
    (["--student", "re0-faulty", "--seeds", "990-1010"], "training seeds"),
    (["--student", "re0-faulty:place=2"], "fault rate"),
    (["--student", "re0-faulty", "--segments", "0"], "positive"),
    (["--student", "re0-faulty", "--heldout", "5-6"], "1000-1999"),
    (["--student", "re0-faulty", "--corpora", "cold"], "testbed has none"),
    (["--student", "re0-faulty", "--max-draws", "4"], "max-draws"),
])
def test_the_command_refuses_bad_input_with_one_line(tmp_path, capsys, args, why):
    rc = re0_main(["--task", "pick_place", "--out", str(tmp_path / "g"), *args])
    err = capsys.readouterr().err
    assert rc == 2 and why in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="since merging integ, the stopgap re0-faulty student injects no fault: the "
                   "rewritten expert defines placement in a helper its cells call (switch to scripted-faulty + takeover)")
def test_one_generation_admits_the_clean_repair_and_mu_succeeds(tmp_path):
    cfg = LoopConfig(task="pick_place", seeds=(3,), student="re0-faulty:place=1.0", out=str(tmp_path / "g"),
                     workers=1, noise=None, segment_lengths=(1,), schedule=(8, 12), backend="fake")
    try:
        report = run_loop(cfg, DistillConfig(corpora=("refine",)))
    finally:
        release_points()
    p = report["passes"]["refine"]
    assert p["decision"].startswith("refine") and p["seat_success"]["successes"] == 0
    (event,) = p["events"]
    assert event["boundary_t"] == 6 and event["audited"][0]["verdict"] == "admitted"
    (entry,) = read_ledger(tmp_path / "g" / "ledger.jsonl")  # validated: Delta-hat, verdict re-derived
    assert entry["delta_hat"] == 1.0 and entry["rollouts_spent"] == 24 and entry["looks"] == [8, 12]
    assert p["hybrid_success"]["successes"] == 1 and p["gate"].startswith("gate open")
    (row,) = [json.loads(x) for x in (tmp_path / "g" / "corpus" / "corpus.jsonl").read_text().splitlines()]
    assert row["weights"][5] == pytest.approx(entry["lcb"]) and row["weights"][:5] == [1.0] * 5
    assert row["turn_sources"][5] == f"repair:{entry['event_id']}" and row["corpus"] == "refine"
    assert sum(m["role"] == "assistant" for m in row["messages"]) == len(row["weights"])
    assert not report["distill"]["ran"] and "scripted" in report["distill"]["reason"]
    assert not report["heldout"]["ran"]
