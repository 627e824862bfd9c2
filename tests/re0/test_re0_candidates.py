"""Candidate teachers: a harmful takeover audited beside the clean one, the gate keeping it out,
and the unverified control taking in every audited repair.

The testbed student (fake robot, deterministic pairs) misplaces on seed 3 and never recovers by
itself (its student arm fails in every draw). Two candidates are audited at the located boundary
with 16-request contracts (long enough for a takeover to place the cube itself): the clean
takeover (admitted: it succeeds in every draw) and the faulty takeover, which places 12 cm off and
does not verify (its paired differences are never positive: not admitted). The ledger names the
teacher of each audit, mu runs the admitted clean repair only, and the refine corpus holds no
turn of the harmful one. The control re-runs mu with both repairs ungated and success-filters.
"""

from __future__ import annotations

import json

import pytest
from re0_helpers import TESTBED_STUDENT, faulty_student_loop

from captain_ros.research.re0 import read_ledger
from captain_ros.research.re0.control import teacher_of, unverified_rows
from captain_ros.research.re0.generation import DistillConfig, run_loop
from captain_ros.research.re0.hybrid import Admission
from captain_ros.research.re0.loop import LoopConfig, seat_jobs
from captain_ros.research.re0.rollouts import release_points
from captain_ros.research.re0.seats import HARMFUL_FAULTS, HARMFUL_PREFIX, TakeoverTeacher

HARMFUL = f"{HARMFUL_PREFIX}:{HARMFUL_FAULTS}"


def test_an_admission_names_its_teacher_and_one_episode_runs_one_teacher(tmp_path):
    from captain_ros.research.re0.contracts import RepairContract

    c = RepairContract(7, ("move_to", "finish"), 4, 4.1)
    a = Admission("g0:refine:pick_place:3:t7:L4:c1", "pick_place", 3, 7, "ab" * 32, c, HARMFUL)
    assert Admission.from_dict(a.to_dict()) == a
    plain = Admission("g0:refine:pick_place:3:t7:L4", "pick_place", 3, 7, "ab" * 32, c)
    assert "teacher" not in plain.to_dict()  # a single-teacher generation's jobs are unchanged
    cfg = LoopConfig("pick_place", (3,), TESTBED_STUDENT, out=str(tmp_path), backend="fake")
    (job,) = seat_jobs(cfg, TESTBED_STUDENT, "mu", [3], [a])
    assert job.options["teacher"] == HARMFUL
    (job,) = seat_jobs(cfg, TESTBED_STUDENT, "mu", [3], [plain])
    assert job.options["teacher"] == "takeover"
    with pytest.raises(ValueError, match="several teachers"):
        seat_jobs(cfg, TESTBED_STUDENT, "mu", [3], [a, plain])


def test_a_sometimes_harmful_takeover_draws_its_mistakes_per_paired_draw():
    from captain_ros.research.re0.contracts import RepairContract

    always, sometimes = TakeoverTeacher(""), TakeoverTeacher("place_offset=0.5,offset_m=0.12")
    clean = TakeoverTeacher()
    for t in (always, sometimes, clean):
        t.reset("pick_place", 3)
        t.reseed(12345)
        t.begin_segment(RepairContract(7, ("move_to", "finish"), 4, 4.1))
    assert always.sampling_seed is None and clean.sampling_seed is None  # rate 1 / no faults
    assert sometimes.sampling_seed == 12345


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~50 fake-rig episodes: 12 paired draws per candidate, mu, the control
def test_the_harmful_candidate_is_kept_out_and_the_control_takes_it_in(tmp_path):
    cfg = faulty_student_loop(
        tmp_path / "g",
        workers=2,
        segment_lengths=(16,),
        schedule=(8, 12),
        candidates=(HARMFUL,),
    )
    try:
        report = run_loop(cfg, DistillConfig(corpora=("refine",)))
        entries = read_ledger(tmp_path / "g" / "ledger.jsonl")
        ccfg = LoopConfig(**{**cfg.__dict__, "out": str(tmp_path / "control")})
        rows, made = unverified_rows(ccfg, tmp_path / "g", entries, 2, topup_seeds=(5,))
    finally:
        release_points()
    (event,) = report["passes"]["refine"]["events"]
    verdicts = {a["teacher"]: a["verdict"] for a in event["audited"]}
    assert verdicts["takeover"] == "admitted" and verdicts[HARMFUL] in ("rejected", "insufficient")
    by_teacher = {teacher_of(e): e for e in entries}  # the ledger names each audit's teacher
    clean, harmful = by_teacher["takeover"], by_teacher[HARMFUL]
    assert clean["verdict"] == "admitted" and harmful["verdict"] == verdicts[HARMFUL]
    assert harmful["event_id"] == clean["event_id"] + ":c1" and harmful["delta_hat"] <= 0.0
    assert all(p["teacher_return"] == 0.0 for p in harmful["pairs"])
    faults = set()  # the faulty takeover did make its mistakes in its segments
    for d in (tmp_path / "g" / "rollouts" / harmful["event_id"]).glob("xi*_teacher"):
        for line in (d / "trajectory.jsonl").read_text().splitlines():
            info = json.loads(line).get("policy_info") or {}
            faults |= {f["fault"] for f in info.get("faults") or []}
    assert {"place_offset", "skip_verify"} <= faults
    p = report["passes"]["refine"]
    assert p["hybrid_success"]["successes"] == 1 and report["candidates"] == [HARMFUL]
    corpus = [
        json.loads(x) for x in (tmp_path / "g" / "corpus" / "corpus.jsonl").read_text().splitlines()
    ]
    repairs = {s for row in corpus for s in row["turn_sources"] if s.startswith("repair:")}
    assert repairs == {f"repair:{clean['event_id']}"}  # nothing of the harmful candidate

    # the control: both audited repairs ungated, success-filtered, topped up by the expert
    assert made["ungated_repairs"] == {"admitted": 1, verdicts[HARMFUL]: 1}
    assert (tmp_path / "control" / "mu_ungated_c1" / "seed_0003").is_dir()  # the harmful mu ran
    assert made["rows_holding_a_repair_by_verdict"] == {"admitted": 1}  # it failed: filtered out
    assert made["rows"] == len(rows) == 2 and made["expert_topup_rows"] == 1
    assert all(set(r["weights"]) <= {0.0, 1.0} for r in rows)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--student", TESTBED_STUDENT, "--candidate", "oracle"], "unknown teacher"),
        (["--student", TESTBED_STUDENT, "--candidate", "takeover-faulty:place_offset=2"], "[0, 1]"),
        (["--student", "{tiny}", "--teacher", "harmful"], "--candidate harmful"),
        (["--student", "{tiny}/nothing"], "expected a model folder"),
    ],
)
def test_the_command_refuses_bad_candidates_with_one_line(tmp_path, capsys, args, why):
    from captain_ros.research.re0.cli import main as re0_main

    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text("{}")
    args = [a.replace("{tiny}", str(tmp_path / "tiny")) for a in args]
    rc = re0_main(["--task", "pick_place", "--out", str(tmp_path / "g"), *args])
    err = capsys.readouterr().err
    assert rc == 2 and why in err and err.count("\n") == 1 and "Traceback" not in err
