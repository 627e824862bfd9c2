"""One RE-0 generation from one command: collect, locate, contracts, verify, ledger, mu, corpus."""

from __future__ import annotations

import json

import pytest
from re0_helpers import TESTBED_STUDENT, faulty_student_loop

from captain_ros.research.re0 import read_ledger
from captain_ros.research.re0.cli import main as re0_main
from captain_ros.research.re0.generation import DistillConfig, run_loop
from captain_ros.research.re0.locate import Located
from captain_ros.research.re0.loop import API, LoopConfig, contract_ladder
from captain_ros.research.re0.rollouts import release_points
from captain_ros.research.re0.seats import teacher_symbols


def test_contracts_grow_in_scope():
    loc = Located(5, (), "x", (5,), ("move_to", "release"))
    ladder = contract_ladder(loc, (4, 1, 2))
    assert [c.max_segment_requests for c in ladder] == [1, 2, 4]
    assert (
        ladder[0].allowed_symbols == ("move_to", "release", "finish")
        and ladder[1].allowed_symbols == API
    )
    assert [c.kappa for c in ladder] == sorted(c.kappa for c in ladder) and {
        c.boundary_t for c in ladder
    } == {5}
    assert contract_ladder(loc, (1,), teacher_symbols("self"))[0].allowed_symbols == (
        "move_to",
        "release",
        "finish",
    )


def test_the_smallest_contract_holds_what_the_teacher_needs():
    """A student's boundary request that called nothing (prose, a broken call) gives no symbols of
    its own; the scripted takeover's setup reads the robot's state and geometry, so its smallest
    contract must allow those, or the teacher could write no request of its segment."""
    loc = Located(3, (), "x", (3,), ())
    first = contract_ladder(loc, (4, 8), teacher_symbols("takeover"))[0]
    assert {"get_robot_state", "robot_geometry", "move_to", "observe"} <= set(first.allowed_symbols)
    assert first.allowed_symbols[-1] == "finish" and set(first.allowed_symbols) < set(API)
    assert teacher_symbols("takeover-faulty") == teacher_symbols("takeover")


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--student", "runs/nope"], "expected a model folder"),
        (["--student", "re0-faulty:place=1"], "expected a model folder or scripted-faulty"),
        (["--student", "scripted-faulty", "--teacher", "openai"], "openai"),
        (["--student", "scripted-faulty", "--teacher", "oracle"], "unknown teacher"),
        (
            ["--student", "scripted-faulty", "--teacher", "takeover-faulty:place_offset=3"],
            "not in [0, 1]",
        ),
        (["--student", "scripted-faulty", "--seeds", "990-1010"], "training seeds"),
        (["--student", "scripted-faulty:place_offset=2"], "not in [0, 1]"),
        (["--student", "scripted-faulty:teleport=0.5"], "unknown fault"),
        (["--student", "scripted-faulty", "--segments", "0"], "positive"),
        (["--student", "scripted-faulty", "--heldout", "5-6"], "1000-1999"),
        (["--student", "scripted-faulty", "--corpora", "cold"], "testbed has none"),
        (["--student", "scripted-faulty", "--max-draws", "4"], "max-draws"),
    ],
)
def test_the_command_refuses_bad_input_with_one_line(tmp_path, capsys, args, why):
    rc = re0_main(["--task", "pick_place", "--out", str(tmp_path / "g"), *args])
    err = capsys.readouterr().err
    assert rc == 2 and why in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow
def test_one_generation_admits_the_takeover_repair_and_mu_succeeds(tmp_path, capsys):
    """The testbed student always misplaces on seed 3 (fake robot, deterministic pairs): the
    smallest contract (4 requests, the boundary's capabilities and the takeover's vocabulary) is
    admitted at M = 12, so the 8-request one is never audited, and mu succeeds where the student
    failed. Resumed in the same folder, the generation reuses every episode and rollout and
    writes the same ledger and corpus."""
    student = TESTBED_STUDENT
    cfg = faulty_student_loop(
        tmp_path / "g", workers=2, segment_lengths=(4, 8), schedule=(8, 12, 16)
    )
    dcfg = DistillConfig(corpora=("refine",))
    try:
        report = run_loop(cfg, dcfg)
        ledger = (tmp_path / "g" / "ledger.jsonl").read_bytes()
        corpus = (tmp_path / "g" / "corpus" / "corpus.jsonl").read_bytes()
        # the same --out again: refused without --resume; with it, everything is read back
        args = ["--student", student, "--task", "pick_place", "--out", str(tmp_path / "g")]
        rc = re0_main([*args, "--seeds", "3", "--backend", "fake"])
        err = capsys.readouterr().err
        assert rc == 2 and "--resume" in err and err.count("\n") == 1
        again = run_loop(LoopConfig(**{**cfg.__dict__, "resume": True}), dcfg)
    finally:
        release_points()
    p1, p2 = report["passes"]["refine"], again["passes"]["refine"]
    spent = sum(a["rollouts"] for a in p1["events"][0]["audited"])
    assert p1["reused"] == {"episodes": 0, "rollouts": 0}
    assert spent == 24 and p2["reused"] == {"episodes": 2, "rollouts": spent}
    assert (tmp_path / "g" / "ledger.jsonl").read_bytes() == ledger
    assert (tmp_path / "g" / "corpus" / "corpus.jsonl").read_bytes() == corpus
    assert {k: v for k, v in p2.items() if k != "reused"} == {
        k: v for k, v in p1.items() if k != "reused"
    }
    p = report["passes"]["refine"]
    assert p["decision"].startswith("refine") and p["seat_success"]["successes"] == 0
    (event,) = p["events"]
    t = event["boundary_t"]
    assert t == 7 and [a["verdict"] for a in event["audited"]] == ["admitted"]
    entries = read_ledger(
        tmp_path / "g" / "ledger.jsonl"
    )  # validated: Delta-hat, verdict re-derived
    (entry,) = entries
    assert entry["delta_hat"] == 1.0 and entry["rollouts_spent"] == 24 and entry["looks"] == [8, 12]
    assert entry["contract"]["max_segment_requests"] == 4
    assert {"get_robot_state", "robot_geometry"} <= set(entry["contract"]["allowed_symbols"])
    assert p["hybrid_success"]["successes"] == 1 and p["gate"].startswith("gate open")
    (row,) = [
        json.loads(x) for x in (tmp_path / "g" / "corpus" / "corpus.jsonl").read_text().splitlines()
    ]
    repair = [i for i, src in enumerate(row["turn_sources"]) if src.startswith("repair:")]
    assert repair[0] == t - 1 and row["weights"][: t - 1] == [1.0] * (t - 1)
    assert all(row["turn_sources"][i] == f"repair:{entry['event_id']}" for i in repair)
    assert (
        all(row["weights"][i] == pytest.approx(entry["lcb"]) for i in repair)
        and row["corpus"] == "refine"
    )
    assert sum(m["role"] == "assistant" for m in row["messages"]) == len(row["weights"])
    assert not report["distill"]["ran"] and "scripted" in report["distill"]["reason"]
    assert not report["heldout"]["ran"]
