"""Generated robot programs run in the project's sandboxed session; calls are only recorded."""

from __future__ import annotations

import pytest

from captain_ros.research.coevolve.sandbox import ProgramSandbox
from captain_ros.research.coevolve.skills import SKILLS, build_client, catalog_text


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    sb = ProgramSandbox(tmp_path_factory.mktemp("ws"), cell_timeout_s=3.0)
    yield sb
    sb.close()


def test_calls_are_recorded_with_their_effective_arguments(sandbox):
    run = sandbox.run(
        {
            "robot_a": "d = 0.25 * 4\nrobot_a.coordinated_linear_transport(direction_xy=[1, 0], distance_m=d, "
            "speed_m_s=0.2)\nrobot_a.stop()",
            "robot_b": "robot_b.coordinated_linear_transport([1, 0], 1.0, 0.2)\nrobot_b.stop()",
        }
    )
    assert run.errors == {}
    for robot in ("robot_a", "robot_b"):
        names = [c.name for c in run.calls[robot]]
        assert names == ["coordinated_linear_transport", "stop"]
        assert run.calls[robot][0].kwargs == {
            "direction_xy": [1, 0],
            "distance_m": 1.0,
            "speed_m_s": 0.2,
        }


def test_programs_cannot_reach_the_host(sandbox):
    run = sandbox.run(
        {
            "robot_a": "import os\nrobot_a.stop()",
            "robot_b": "robot_a.stop()\nrobot.move_to(position=[0, 0, 0.1])\nrobot_b.stop()",
        }
    )
    assert "sandbox" in run.errors["robot_a"] and run.calls["robot_a"] == []
    # robot_b may not drive robot_a, and the arm client's calls are refused by the host
    assert "refused calls: robot_a.stop, move_to" in run.errors["robot_b"]
    assert [c.name for c in run.calls["robot_b"]] == ["stop"]
    escape = sandbox.run(
        {
            "robot_a": "open('/etc/passwd').read()\nrobot_a.stop()",
            "robot_b": "while True:\n    pass",
        }
    )
    assert "sandbox" in escape.errors["robot_a"] or "PermissionError" in escape.errors["robot_a"]
    assert "Timeout" in escape.errors["robot_b"]


def test_handles_expose_only_the_skill_catalog():
    sent = []
    h = build_client(lambda n, k: sent.append((n, k)))
    h.coordinated_pivot("inner_support", 1.5, 0.2)
    h.stop()
    assert sent == [
        (
            "coordinated_pivot",
            {"role": "inner_support", "angle_rad": 1.5, "angular_speed_rad_s": 0.2},
        ),
        ("stop", {}),
    ]
    with pytest.raises(AttributeError, match="no skill"):
        h.self_destruct()
    with pytest.raises(AttributeError, match="read-only"):
        h.x = 1
    text = catalog_text()
    assert all(name in text for name in SKILLS) and "kp 24" in text
