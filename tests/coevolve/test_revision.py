"""Typed revision: the host checks a child against its failed parent, scope by scope."""

from __future__ import annotations

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.coevolve.strategy import (
    Coordination,
    Objective,
    Revision,
    Strategy,
    check_revision,
)

PIVOT = Coordination(
    "coordinated_pivot",
    Objective("turn", "segment_1"),
    "asymmetric",
    ("outer_mover", "inner_support"),
)
THETA = {
    "robot_a": {"role": "outer_mover", "angle_rad": 1.5, "angular_speed_rad_s": 0.35},
    "robot_b": {"role": "inner_support", "angle_rad": 1.5, "angular_speed_rad_s": 0.35},
}
PARENT = Strategy(PIVOT, THETA)


def slower(rate):
    return {r: {**v, "angular_speed_rad_s": rate} for r, v in THETA.items()}


def test_parameter_scope_changes_numbers_only():
    assert check_revision(PARENT, Revision("parameter", Strategy(PIVOT, slower(0.17)))) == []
    same = check_revision(PARENT, Revision("parameter", Strategy(PIVOT, slower(0.35))))
    assert any("at least one number" in p for p in same)
    out_of_bounds = check_revision(PARENT, Revision("parameter", Strategy(PIVOT, slower(2.0))))
    assert any("outside" in p for p in out_of_bounds)
    moved_roles = Coordination(
        PIVOT.primitive, PIVOT.objective, "synchronous", ("co_rotator", "co_rotator")
    )
    assert any(
        "keep primitive" in p
        for p in check_revision(PARENT, Revision("parameter", Strategy(moved_roles, slower(0.17))))
    )
    one_robot = check_revision(
        PARENT, Revision("parameter", Strategy(PIVOT, {"robot_a": THETA["robot_a"]}))
    )
    assert any("robot_a and robot_b" in p for p in one_robot)


def test_coordination_scope_changes_mode_or_roles_only():
    co = Coordination(PIVOT.primitive, PIVOT.objective, "synchronous", ("co_rotator", "co_rotator"))
    assert check_revision(PARENT, Revision("coordination", Strategy(co))) == []
    swapped = Coordination(
        PIVOT.primitive, PIVOT.objective, "asymmetric", ("inner_support", "outer_mover")
    )
    assert check_revision(PARENT, Revision("coordination", Strategy(swapped))) == []
    assert any(
        "must change the mode or the roles" in p
        for p in check_revision(PARENT, Revision("coordination", Strategy(PIVOT)))
    )
    other = Coordination(
        PIVOT.primitive, Objective("turn", "segment_2"), "synchronous", ("co_rotator", "co_rotator")
    )
    assert any(
        "keep the primitive and the objective" in p
        for p in check_revision(PARENT, Revision("coordination", Strategy(other)))
    )
    bad = Coordination(
        PIVOT.primitive, PIVOT.objective, "synchronous", ("inner_support", "co_rotator")
    )
    assert any(
        "does not admit" in p
        for p in check_revision(PARENT, Revision("coordination", Strategy(bad)))
    )


def test_strategy_scope_changes_maneuver_and_keeps_admissible_coordination():
    align = Coordination(
        "coordinated_alignment",
        Objective("restore_spacing"),
        "asymmetric",
        ("reference", "corrector"),
    )
    assert check_revision(PARENT, Revision("strategy", Strategy(align))) == []
    transport = Coordination(
        "coordinated_linear_transport", Objective("recentre"), "synchronous", ("peer", "peer")
    )
    t_parent = Strategy(transport, {})
    kept = Coordination(
        "coordinated_linear_transport",
        Objective("reach_gate", "gate_2"),
        "synchronous",
        ("peer", "peer"),
    )
    assert check_revision(t_parent, Revision("strategy", Strategy(kept))) == []
    assert any(
        "must change the primitive or the objective" in p
        for p in check_revision(t_parent, Revision("strategy", Strategy(transport)))
    )
    # pivot -> pivot with another objective must keep the parent's (admissible) mode and roles
    other_turn = Coordination(
        "coordinated_pivot",
        Objective("turn", "segment_2"),
        "synchronous",
        ("co_rotator", "co_rotator"),
    )
    assert any(
        "keeps mode and roles" in p
        for p in check_revision(PARENT, Revision("strategy", Strategy(other_turn)))
    )


def test_untrusted_coordination_json_gets_clear_errors():
    with pytest.raises(InvalidArgumentError, match="unknown primitive"):
        Coordination.from_dict(
            {
                "primitive": "teleport",
                "objective": {"kind": "turn"},
                "mode": "synchronous",
                "roles": {"robot_a": "peer", "robot_b": "peer"},
            }
        )
    with pytest.raises(InvalidArgumentError, match="roles"):
        Coordination.from_dict(
            {"primitive": "release", "objective": "release", "mode": "synchronous", "roles": "both"}
        )
    with pytest.raises(InvalidArgumentError, match="objective kind"):
        Coordination.from_dict(
            {
                "primitive": "release",
                "objective": {"kind": "fly"},
                "mode": "synchronous",
                "roles": ["peer", "peer"],
            }
        )
    with pytest.raises(InvalidArgumentError, match="scope"):
        Revision("everything", PARENT)
    z = Coordination.from_dict(
        {
            "primitive": "release",
            "objective": "release",
            "mode": "synchronous",
            "roles": ["peer", "peer"],
            "intent": "let go",
        }
    )
    assert z.admissible and z.to_dict()["roles"] == {"robot_a": "peer", "robot_b": "peer"}
