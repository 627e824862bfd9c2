"""The CoEvolve loop end to end on the MuJoCo pair: termination labels, rollback, fingerprints,
typed-revision constraints, memory transfer, records and the report."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from captain_ros.research.coevolve.loop import CoEvolveRun
from captain_ros.research.coevolve.memory import Memory
from captain_ros.research.coevolve.records import RunConfig, RunSummary
from captain_ros.research.coevolve.report import render
from captain_ros.research.coevolve.roles import make_roles
from captain_ros.research.coevolve.roles.base import ProgramPair, RoleOutput, RoleSet
from captain_ros.research.coevolve.roles.scripted import (
    ScriptedCoder,
    ScriptedOrchestrator,
    program,
)
from captain_ros.research.coevolve.roles.scripted_reviser import ScriptedReviser
from captain_ros.research.coevolve.strategy import Coordination, Objective, Revision, Strategy


def events(folder):
    return [json.loads(line) for line in (folder / "run.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_full_scripted_run_succeeds_and_records_everything(tmp_path):
    out = tmp_path / "run"
    s = CoEvolveRun(RunConfig(layout="base", seed=3), make_roles("scripted"), out).run()
    assert s.label == "success" and s.outcome.success
    assert s.outcome.milestones_final == s.outcome.milestones_total == 6
    assert all(t is not None for t in s.outcome.first_attainment)
    assert list(s.outcome.first_attainment) == sorted(s.outcome.first_attainment)
    assert s.outcome.charged <= 80 and s.outcome.accepted < s.outcome.charged  # some rejections
    evs = events(out)
    rej = [e for e in evs if e["type"] == "transaction" and not e["accepted"]]
    rollbacks = [e for e in evs if e["type"] == "rollback"]
    revisions = [e for e in evs if e["type"] == "revision"]
    assert len(rollbacks) == len(rej) == s.rollbacks and all(r["verified"] for r in rollbacks)
    assert revisions and all(r["approved"] == (not r["problems"]) for r in revisions)
    assert s.revisions_approved >= 1
    assert RunSummary.load(out) == s
    bank = Memory.load(out / "memory")
    assert bank.exemplars and any(r.polarity == "counterexample" for r in bank.strategy)
    page = render(out)
    assert "typed revision" in page and "rollback to ckpt_" in page and "<svg" in page


def test_budget_exhaustion_is_label_b(tmp_path):
    s = CoEvolveRun(RunConfig(seed=5, budget=3), make_roles("scripted"), tmp_path).run()
    assert s.label == "B" and s.outcome.charged == 3 and not s.outcome.success
    assert s.outcome.first_attainment[0] is not None  # gate 1 within three transactions


class Broken:
    """An orchestrator whose outputs are never valid (a generation stall)."""

    def commit(self, ctx):
        return RoleOutput(None, error="unparseable output", model_calls=1)


def test_generation_stall_is_label_g_and_charges_nothing(tmp_path):
    roles = RoleSet(Broken(), ScriptedCoder(), ScriptedReviser(), "broken")
    s = CoEvolveRun(RunConfig(seed=5, stall_limit=4), roles, tmp_path).run()
    assert s.label == "G" and s.outcome.charged == 0 and s.prevalidation_failures == 4
    assert s.model_calls == 4
    assert [e["stage"] for e in events(tmp_path) if e["type"] == "prevalidation"] == [
        "orchestrator"
    ] * 4


def test_cancel_is_label_c(tmp_path):
    box = {"n": 0}

    def stop() -> bool:
        box["n"] += 1
        return box["n"] > 2

    s = CoEvolveRun(RunConfig(seed=5), make_roles("scripted"), tmp_path, should_stop=stop).run()
    assert s.label == "C" and s.outcome.charged == 2


class FastPivot(ScriptedOrchestrator):
    """Pivots right after lifting (a maneuver too fast for the outer robot)."""

    def commit(self, ctx):
        if ctx.phase.kind != "initialize":
            return RoleOutput(
                Coordination(
                    "coordinated_pivot",
                    Objective("turn", "segment_0"),
                    "asymmetric",
                    ("outer_mover", "inner_support"),
                )
            )
        return super().commit(ctx)


class FastCoder(ScriptedCoder):
    def implement(self, ctx):
        if ctx.z.primitive != "coordinated_pivot":
            return super().implement(ctx)
        rate = 0.5 - 0.01 * ctx.attempt  # a new (still too fast) guess each time
        theta = {
            "robot_a": {"role": "outer_mover", "angle_rad": 1.5, "angular_speed_rad_s": rate},
            "robot_b": {"role": "inner_support", "angle_rad": 1.5, "angular_speed_rad_s": rate},
        }
        return RoleOutput(
            ProgramPair({r: program(r, "coordinated_pivot", theta[r]) for r in theta})
        )


def test_drops_reaching_the_limit_are_label_d(tmp_path):
    roles = RoleSet(FastPivot(), FastCoder(), None, "fast")
    s = CoEvolveRun(RunConfig(seed=5, drop_limit=2), roles, tmp_path).run()
    assert s.label == "D" and s.drops == 2 and s.outcome.accepted == 1  # only initialization
    assert s.outcome.charged == 3 and s.rollbacks == 2


class SameChild:
    """A reviser that keeps proposing the already rejected strategy (to exercise fingerprints)."""

    def revise(self, ctx):
        z = ctx.parent.z
        theta = {r: {**v, "angular_speed_rad_s": 0.45} for r, v in ctx.parent.theta.items()}
        return RoleOutput(Revision("parameter", Strategy(z, theta), "same again"))


class ConstantCoder(FastCoder):
    def implement(self, ctx):
        if ctx.constraint is not None:
            theta = ctx.constraint.child.theta
            return RoleOutput(
                ProgramPair({r: program(r, ctx.z.primitive, theta[r]) for r in theta})
            )
        return super().implement(replace(ctx, attempt=5))  # rate 0.45, as the child


def test_fingerprint_blocks_an_identical_rejected_transaction(tmp_path):
    roles = RoleSet(FastPivot(), ConstantCoder(), SameChild(), "stubborn")
    s = CoEvolveRun(RunConfig(seed=5, stall_limit=3, drop_limit=6), roles, tmp_path).run()
    evs = events(tmp_path)
    blocked = [e for e in evs if e["type"] == "prevalidation" and e["stage"] == "fingerprint"]
    assert blocked and s.outcome.charged == 2  # initialization + one pivot, then only refusals
    refused = [e for e in evs if e["type"] == "revision" and not e["approved"]]
    assert refused and "at least one number" in refused[0]["problems"][0]
    assert s.label == "G"


class IgnoresChild(FastCoder):
    def implement(self, ctx):
        return super().implement(replace(ctx, constraint=None))


def test_an_approved_parameter_child_constrains_the_coder(tmp_path):
    roles = RoleSet(FastPivot(), IgnoresChild(), ScriptedReviser(), "ignores")
    CoEvolveRun(RunConfig(seed=5, stall_limit=2), roles, tmp_path).run()
    evs = events(tmp_path)
    assert any(e["type"] == "revision" and e["approved"] for e in evs)
    assert any(
        e["type"] == "prevalidation"
        and "differ from the approved parameter revision" in e["reason"]
        for e in evs
    )


def test_a_preloaded_bank_is_retrieved_and_stays_read_only(tmp_path):
    bank = tmp_path / "bank"
    m = Memory()
    from captain_ros.research.coevolve.memory import ActionExemplar

    theta = {
        r: {"direction_xy": [1.0, 0.0], "distance_m": 1.0, "speed_m_s": 0.18}
        for r in ("robot_a", "robot_b")
    }
    m.add_exemplar(
        ActionExemplar(
            "",
            "coordinated_linear_transport",
            "reach_gate",
            "synchronous",
            "peer",
            "traverse_straight",
            "none",
            {},
            theta,
        )
    )
    m.save(bank)
    before = (bank / "action_exemplars.json").read_text()
    s = CoEvolveRun(
        RunConfig(seed=5, budget=2, memory_in=str(bank)), make_roles("scripted"), tmp_path / "run"
    ).run()
    tx = [e for e in events(tmp_path / "run") if e["type"] == "transaction"]
    assert tx[1]["exemplars_used"] == ["A001"] and tx[1]["theta"]["robot_a"]["speed_m_s"] == 0.18
    assert s.memory_hits >= 1 and (bank / "action_exemplars.json").read_text() == before
    assert len(Memory.load(tmp_path / "run" / "memory").exemplars) >= 2  # the run's own copy grew


def test_report_escapes_untrusted_text(tmp_path):
    CoEvolveRun(RunConfig(seed=5, budget=1), make_roles("scripted"), tmp_path).run()
    with (tmp_path / "run.jsonl").open("a") as f:
        f.write(
            json.dumps(
                {"type": "prevalidation", "stage": "coder", "reason": "<script>alert(1)</script>"}
            )
            + "\n"
        )
    page = render(tmp_path)
    assert "<script>alert" not in page and "&lt;script&gt;" in page
