"""Strategy and exemplar memory: abstract records, retrieval, promotion after execution, banks."""

from __future__ import annotations

import json

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.coevolve.memory import ActionExemplar, Memory, StrategyRecord
from captain_ros.research.coevolve.promotion import promote_accepted, promote_rejected, role_rule_of
from captain_ros.research.coevolve.strategy import Coordination, Objective, Revision, Strategy
from captain_ros.research.coevolve.verifier import Check, Evidence

PIVOT = Coordination(
    "coordinated_pivot",
    Objective("turn", "segment_1"),
    "asymmetric",
    ("outer_mover", "inner_support"),
)
THETA = {
    r: {"role": role, "angle_rad": 1.5, "angular_speed_rad_s": 0.17}
    for r, role in (("robot_a", "outer_mover"), ("robot_b", "inner_support"))
}
ACCEPTED = Evidence(
    True,
    (Check("progress", True, "progress"),),
    summary="ACCEPTED",
    completed_phases=(),
    setup_only=False,
)
REJECTED = Evidence(
    False,
    (Check("payload_tilt_during", False, "stability"),),
    "payload_tilt",
    "stability",
    "robot_a (outer_mover)",
    "REJECTED",
)


def record(**kw):
    base = dict(
        id="",
        polarity="positive",
        situation="traverse_corner",
        turn="left",
        failure_context=(),
        primitive="coordinated_pivot",
        objective_kind="turn",
        mode="asymmetric",
        role_rule="inner=turn_side",
    )
    base.update(kw)
    return StrategyRecord(**base)


def test_strategy_records_hold_no_coordinates_or_magnitudes():
    with pytest.raises(InvalidArgumentError, match="abstract"):
        record(failure_pattern="tilt above 12 degrees")
    with pytest.raises(InvalidArgumentError, match="abstract"):
        record(repair_changes=("speed:0.17",))
    with pytest.raises(InvalidArgumentError, match="role_rule"):
        record(role_rule="robot_a inner")
    assert record(repair_changes=("angular_speed:decrease",)).repair_changes == (
        "angular_speed:decrease",
    )


def test_role_rule_is_relative_to_the_turn():
    assert (
        role_rule_of(PIVOT, "left") == "inner=turn_side"
    )  # robot_b is the inner robot on a left turn
    assert role_rule_of(PIVOT, "right") == "inner=far_side"
    co = Coordination(PIVOT.primitive, PIVOT.objective, "synchronous", ("co_rotator", "co_rotator"))
    assert role_rule_of(co, "left") == "co_rotate"


def test_retrieval_filters_by_situation_and_ranks_by_failure_context():
    m = Memory()
    general = m.add_strategy(record())
    repair = m.add_strategy(
        record(
            failure_context=("payload_tilt",),
            repair_scope="parameter",
            repair_changes=("angular_speed:decrease",),
        )
    )
    m.add_strategy(
        record(
            situation="traverse_straight",
            primitive="coordinated_linear_transport",
            objective_kind="reach_gate",
            mode="synchronous",
            role_rule="peer",
        )
    )
    got = m.retrieve_strategy("traverse_corner", "left", ("payload_tilt",))
    assert [r.id for r in got] == [repair.id, general.id]
    assert [r.id for r in m.retrieve_strategy("traverse_corner", "left", ())][0] == general.id
    assert m.retrieve_strategy("place", "none", ()) == []
    assert m.retrieve_strategy("traverse_corner", "right", ()) == []  # turn-specific records
    assert m.hits and m.hits[0]["store"] == "strategy"
    # the same record again raises its support instead of duplicating it
    again = m.add_strategy(record())
    assert again.id == general.id and again.support == 2 and len(m.strategy) == 3


def test_exemplars_match_primitive_objective_mode_and_rank_by_situation():
    m = Memory()
    far = m.add_exemplar(
        ActionExemplar(
            "",
            "coordinated_pivot",
            "turn",
            "asymmetric",
            "inner=turn_side",
            "enter_target_corner",
            "left",
            {},
            THETA,
        )
    )
    near = m.add_exemplar(
        ActionExemplar(
            "",
            "coordinated_pivot",
            "turn",
            "asymmetric",
            "inner=turn_side",
            "traverse_corner",
            "left",
            {},
            THETA,
        )
    )
    m.add_exemplar(
        ActionExemplar(
            "",
            "coordinated_pivot",
            "turn",
            "synchronous",
            "co_rotate",
            "traverse_corner",
            "left",
            {},
            THETA,
        )
    )
    got = m.retrieve_exemplars("coordinated_pivot", "turn", "asymmetric", "traverse_corner", "left")
    assert [e.id for e in got] == [near.id, far.id]
    assert (
        m.retrieve_exemplars("coordinated_alignment", "restore_spacing", "asymmetric", "x", "none")
        == []
    )


def test_promotion_only_from_executed_transactions():
    m = Memory()
    ids = promote_rejected(m, PIVOT, REJECTED, "traverse_corner", "left", "base:0:t5")
    assert m.strategy[0].polarity == "counterexample" and m.strategy[0].failure_context == (
        "payload_tilt",
    )
    assert m.strategy[0].failure_pattern == "payload_tilt_by_outer_mover" and ids == [
        m.strategy[0].id
    ]
    assert m.exemplars == []  # a rejected execution is never an exemplar
    rev = Revision("parameter", Strategy(PIVOT, THETA), "slower", ("angular_speed:decrease",))
    promote_accepted(
        m,
        PIVOT,
        THETA,
        {"robot_a": "a", "robot_b": "b"},
        ACCEPTED,
        "traverse_corner",
        "left",
        rev,
        REJECTED,
        "base:0:t6",
    )
    kinds = {(r.polarity, r.failure_context, r.repair_scope) for r in m.strategy}
    assert (
        "positive",
        ("payload_tilt",),
        "parameter",
    ) in kinds  # the repair that resolved the failure
    assert ("positive", (), "") in kinds  # the principle
    assert len(m.exemplars) == 1 and m.exemplars[0].params == THETA
    assert (
        promote_accepted(m, PIVOT, THETA, {}, REJECTED, "traverse_corner", "left", None, None, "x")
        == []
    )


def test_disabled_memory_neither_retrieves_nor_promotes():
    m = Memory(enabled=False)
    promote_rejected(m, PIVOT, REJECTED, "traverse_corner", "left", "s")
    promote_accepted(m, PIVOT, THETA, {}, ACCEPTED, "traverse_corner", "left", None, None, "s")
    assert (
        m.strategy == []
        and m.exemplars == []
        and m.retrieve_strategy("traverse_corner", "left", ()) == []
    )


def test_banks_round_trip_as_json(tmp_path):
    m = Memory()
    m.add_strategy(
        record(
            failure_context=("wall_contact",),
            repair_scope="coordination",
            repair_changes=("roles:swap",),
        )
    )
    m.add_exemplar(
        ActionExemplar(
            "",
            "coordinated_pivot",
            "turn",
            "asymmetric",
            "inner=turn_side",
            "traverse_corner",
            "left",
            {"robot_a": "robot_a.stop()"},
            THETA,
        )
    )
    m.save(tmp_path / "bank")
    back = Memory.load(tmp_path / "bank")
    assert back.strategy == m.strategy and back.exemplars == m.exemplars
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "strategy_records.json").write_text(json.dumps([{"id": "S1"}]))
    with pytest.raises(InvalidArgumentError, match="not readable"):
        Memory.load(tmp_path / "bad")
    assert Memory.load(tmp_path / "missing").strategy == []
