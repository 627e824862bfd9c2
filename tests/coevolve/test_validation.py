"""Host validation: program shape, syntax, allowed methods, bounds and paired consistency."""

from __future__ import annotations

import pytest

from captain_ros.research.coevolve.strategy import Coordination, Objective
from captain_ros.research.coevolve.validation import (
    Call,
    check_pair,
    check_params,
    check_program,
    effective_theta,
    normalize_program,
)

GOOD = "d = 0.5 * 2\nrobot_a.coordinated_linear_transport(direction_xy=[1, 0], distance_m=d, speed_m_s=0.2)\nrobot_a.stop()\n"


def test_a_valid_program_passes():
    assert check_program(GOOD, "robot_a") == []
    assert (
        check_program(
            "robot_b.coordinated_pivot('inner_support', math.pi / 2, 0.15)\nrobot_b.stop()",
            "robot_b",
        )
        == []
    )


@pytest.mark.parametrize(
    "code, words",
    [
        ("import os\nrobot_a.stop()", "Import"),
        ("for i in range(3):\n    robot_a.stop()", "For"),
        (
            "robot_a.initialization()\nrobot_a.initialization()\nrobot_a.stop()",
            "exactly one action",
        ),
        ("robot_a.initialization()", "ends with exactly one explicit"),
        ("robot_a.initialization()\nrobot_b.stop()", "own handle"),
        ("robot_a.move_to(position=[0, 0, 1])\nrobot_a.stop()", "not an allowed method"),
        ("robot_a.initialization(\nrobot_a.stop()", "syntax error"),
        ("x = robot_a._send\nrobot_a.stop()", "not defined"),
        ("x = math.__dict__\nrobot_a.stop()", "attribute access"),
        ("x = open('f')\nrobot_a.stop()", "not allowed in an argument"),
        ("robot_a.initialization()\nrobot_a.stop()\nrobot_a.stop()", "exactly one explicit"),
        ("robot_a.retreat(distance_m=y, speed_m_s=0.1)\nrobot_a.stop()", "not defined"),
        ("robot_a = 3\nrobot_a.stop()", "cannot be reassigned"),
        ("robot_a.retreat(**{'distance_m': 1})\nrobot_a.stop()", "**kwargs"),
        ("", "non-empty"),
        ("x = 1\n" * 30 + "robot_a.stop()", "statements"),
    ],
)
def test_invalid_programs_are_refused_with_a_reason(code, words):
    problems = check_program(code, "robot_a")
    assert problems and any(words in p for p in problems), problems


def test_bounds_and_argument_names():
    assert (
        check_params(
            "coordinated_linear_transport",
            {"direction_xy": [1, 0], "distance_m": 0.5, "speed_m_s": 0.2},
        )
        == []
    )
    msgs = check_params(
        "coordinated_linear_transport",
        {"direction_xy": [0, 0], "distance_m": 3.0, "speed_m_s": float("nan"), "x": 1},
    )
    text = " ".join(msgs)
    assert "outside [0.05, 1.5]" in text and "finite" in text and "unknown argument 'x'" in text
    assert "|direction_xy|" in text
    assert check_params(
        "coordinated_pivot", {"role": "boss", "angle_rad": 1.0, "angular_speed_rad_s": 0.2}
    ) == ["role='boss' is not one of inner_support, outer_mover, co_rotator"]
    assert "needs hold_s" in " ".join(check_params("release", {}))
    assert check_params("fly", {}) == ["unknown skill 'fly'"]


def _calls(name, a, b):
    return {
        "robot_a": [Call(name, a), Call("stop", {})],
        "robot_b": [Call(name, b), Call("stop", {})],
    }


def test_paired_consistency():
    z = Coordination(
        "coordinated_linear_transport",
        Objective("reach_gate", "gate_1"),
        "synchronous",
        ("peer", "peer"),
    )
    args = {"direction_xy": [1, 0], "distance_m": 0.5, "speed_m_s": 0.2}
    assert check_pair(z, _calls(z.primitive, args, dict(args))) == []
    msg = check_pair(z, _calls(z.primitive, args, {**args, "speed_m_s": 0.25}))
    assert msg and "disagree on speed_m_s" in msg[0]
    pivot = Coordination(
        "coordinated_pivot",
        Objective("turn", "segment_1"),
        "asymmetric",
        ("outer_mover", "inner_support"),
    )
    pa = {"role": "outer_mover", "angle_rad": 1.5, "angular_speed_rad_s": 0.15}
    pb = {"role": "inner_support", "angle_rad": 1.5, "angular_speed_rad_s": 0.15}
    assert check_pair(pivot, _calls(pivot.primitive, pa, pb)) == []
    swapped = check_pair(pivot, _calls(pivot.primitive, pb, pa))
    assert any("committed roles" in p for p in swapped)
    wrong = check_pair(pivot, _calls("coordinated_linear_transport", args, args))
    assert any("committed primitive" in p for p in wrong)
    align = Coordination(
        "coordinated_alignment",
        Objective("restore_spacing"),
        "asymmetric",
        ("reference", "corrector"),
    )
    ref = {
        "role": "reference",
        "correction_xy": [0.05, 0],
        "yaw_correction_rad": 0.0,
        "speed_m_s": 0.1,
    }
    cor = {
        "role": "corrector",
        "correction_xy": [0.05, 0],
        "yaw_correction_rad": 0.0,
        "speed_m_s": 0.1,
    }
    assert any("zero correction" in p for p in check_pair(align, _calls(align.primitive, ref, cor)))
    missing_stop = {
        "robot_a": [Call(z.primitive, args)],
        "robot_b": [Call(z.primitive, args), Call("stop", {})],
    }
    assert any("expected one skill call then stop" in p for p in check_pair(z, missing_stop))


def test_effective_theta_and_normalisation():
    theta = effective_theta(
        _calls(
            "coordinated_linear_transport",
            {"direction_xy": [3, 4], "distance_m": 1, "speed_m_s": 0.2},
            {"direction_xy": [3, 4], "distance_m": 1, "speed_m_s": 0.2},
        )
    )
    assert theta["robot_a"]["direction_xy"] == pytest.approx([0.6, 0.8])
    assert normalize_program("robot_a.stop()  # done\n\n") == normalize_program("robot_a.stop( )")
