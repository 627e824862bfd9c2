"""The whole RE-0 loop with a learned student: a tiny random transformers model (built from
config, offline) in the seat, the scripted expert as teacher, on the fake rig. The tiny model
fails everything, so the test checks the pipeline: cold and refine passes, the ledger, the corpus
weights, the closed gate reported, distillation through ``run_sft``, the held-out re-evaluation
with McNemar, and that the distilled folder loads and acts as a policy. Also: a paired rollout
whose seat is the model and whose teacher arm is the expert's takeover."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from re0_helpers import frozen_clock  # noqa: E402, F401 (tests/re0 on the path)
from tiny_student import model_job, save_tiny_student  # noqa: E402

from captain_ros.cli.main import main  # noqa: E402
from captain_ros.learn.rows import load_rows  # noqa: E402
from captain_ros.research.re0 import read_ledger  # noqa: E402
from captain_ros.research.re0.contracts import RepairContract, scope_cost  # noqa: E402
from captain_ros.research.re0.loop import API  # noqa: E402
from captain_ros.research.re0.rollouts import EventSpec, PairedRunner, release_points, student_job  # noqa: E402
from captain_ros.research.re0.seats import ModelSeat, TakeoverTeacher, make_seats  # noqa: E402

pytestmark = [pytest.mark.learn, pytest.mark.slow]
SEAT = {"max_new_tokens": 16}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    torch.set_num_threads(1)
    return save_tiny_student(tmp_path_factory.mktemp("tiny") / "student")


def test_the_loop_distills_a_model_student_and_re_evaluates_it(tiny, tmp_path, capsys):
    out = tmp_path / "g"
    args = [
        "learn",
        "re0",
        "--student",
        str(tiny),
        "--teacher",
        "scripted",
        "--task",
        "pick_place",
        "--out",
        str(out),
        "--seeds",
        "0",
        "--heldout",
        "1000",
        "--workers",
        "1",
        "--backend",
        "fake",
        "--max-new-tokens",
        "16",
        "--max-requests",
        "20",
        "--retention",
        "0.7",
        "--max-steps",
        "1",
        "--grad-accum",
        "1",
        "--bf16",
        "off",
        "--device",
        "cpu",
        "--max-draws",
        "8",
        "--segments",
        "16",
    ]
    rc = main(args)
    text = capsys.readouterr().out
    assert rc == 0, text
    report = json.loads((out / "re0.json").read_text())
    cold, refine = report["passes"]["cold"], report["passes"]["refine"]
    assert cold["seat"] == "scripted" and cold["seat_success"]["successes"] == 1
    assert refine["seat"].startswith("model:") and refine["seat_success"]["successes"] == 0
    assert refine["decision"].startswith("refine") and not report["abstained"]
    assert (
        refine["gate"] == "gate closed: 0 of 1 audited events admitted" and not refine["gate_open"]
    )
    (event,) = refine["events"]  # the tiny model's first reply has no tool call: located there
    assert event["boundary_t"] == 1 and "had no tool call" in event["evidence"][0]["detail"]
    (entry,) = read_ledger(out / "ledger.jsonl")  # validated
    assert entry["verdict"] == "insufficient" and entry["rollouts_spent"] == 16
    rows = load_rows(out / "corpus")  # Learning I's reader, unchanged
    assert len(rows) == report["corpus"]["rows"] == report["corpus"]["by_corpus"]["cold"] == 1
    assert set(rows[0].weights) == {0.7}  # the teacher's own verified-completed turns: retention
    assert report["distill"]["ran"] and report["distill"]["metrics"]["steps"] == 1
    held = report["heldout"]
    assert held["ran"] and held["seeds"] == [1000] and held["mcnemar"]["n_pairs"] == 1
    assert held["parent"]["n"] == held["child"]["n"] == 1 and not held["errors"]
    assert "distill: student in" in text and "held-out: parent 0/1" in text
    child = ModelSeat(report["distill"]["folder"], SEAT)  # the distilled folder loads as a policy
    child.reset("pick_place", 1000)
    reply = child.act([{"role": "system", "content": "x"}, {"role": "user", "content": "go"}], [])
    assert reply.completion_tokens > 0
    # resumed: every episode and the distillation are read back, nothing is rerun
    before = (Path(report["distill"]["folder"]) / "re0_distill.json").read_text()
    assert main([*args, "--resume"]) == 0, capsys.readouterr().out
    again = json.loads((out / "re0.json").read_text())
    assert again["distill"]["reused"] and again["heldout"]["reused"] == 2
    assert {k: p["reused"]["episodes"] for k, p in again["passes"].items()} == {
        "cold": 1,
        "refine": 1,
    }
    assert (Path(report["distill"]["folder"]) / "re0_distill.json").read_text() == before
    assert again["corpus"] == report["corpus"] and again["heldout"]["mcnemar"] == held["mcnemar"]


def test_a_model_seat_pairs_against_the_experts_takeover(tiny, tmp_path):
    seat = f"model:{tiny}"
    assert isinstance(make_seats(seat, "takeover")[1], TakeoverTeacher)
    job = model_job(
        seat, tmp_path / "ep", teacher="takeover", seat_options=SEAT, budgets={"max_requests": 20}
    )
    rec = student_job(job)
    assert not rec["strict_success"]
    contract = RepairContract(1, API, 16, scope_cost(16, len(API)))
    spec = EventSpec(
        "e-model",
        str(tmp_path / "ep"),
        contract.to_dict(),
        seat,
        "takeover",
        str(tmp_path / "rollouts"),
        "fake",
        None,
        "success",
        SEAT,
    )
    runner = PairedRunner(spec, workers=1)
    try:
        (draw,) = runner(0, 1)
    finally:
        release_points()
    teacher = next(r for r in runner.records if r.extra["rollout"]["arm"] == "teacher")
    turns = teacher.extra["rollout"]["turns"]
    assert turns[0]["source"] == "repair" and turns[0]["event_id"] == "e-model"
    assert (
        draw.student_return == 0.0 and draw.teacher_return == float(teacher.strict_success) == 1.0
    )
    assert sum(x["source"] == "repair" for x in turns) > 1, turns  # the takeover went on past setup
    assert len(runner.candidate_codes()) == 1
