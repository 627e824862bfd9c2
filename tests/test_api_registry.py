"""The capability registry: one declaration per capability drives client, TASK.md and validation."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from captain_ros.api import registry
from captain_ros.api.client import RobotResult, build_client, client_source
from captain_ros.api.taskmd import api_section_md
from captain_ros.api.validation import validate_call
from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.core.result import FailureCategory

PAPER_GROUPS = {
    "perception": ["observe", "segment", "point", "mark_point", "select_detection", "track_target"],
    "measurement": [
        "measure_object_geometry",
        "measure_image_points",
        "inspect_contact_geometry",
        "inspect_release_geometry",
        "compare_object_observations",
    ],
    "motion": ["move_to", "hold", "recover", "release"],
    "planning": ["check_motion", "preview_motion"],
    "state": [
        "get_robot_state",
        "gripper_state",
        "robot_geometry",
        "read_motion_trajectory",
        "transform_pose",
    ],
}


def test_22_capabilities_plus_finish_in_the_papers_groups():
    caps = [c for c in registry.CAPABILITIES if c.name != "finish"]
    assert len(caps) == 22
    for group, names in PAPER_GROUPS.items():
        assert [c.name for c in caps if c.group == group] == names
    assert registry.get("finish").group == "completion"
    assert {"move_to", "hold", "recover", "release"} == registry.PHYSICAL
    with pytest.raises(UnknownNameError, match="move_to"):
        registry.get("grasp")


def test_every_declaration_is_documented_with_units():
    for c in registry.CAPABILITIES:
        assert c.doc and c.summary.endswith(".")
        assert c.returns
        for p in c.params:
            assert p.doc, (c.name, p.name)
            if p.name.endswith(("_m", "_s", "_n")) and p.name != "last_n":
                assert "[" in p.doc, f"{c.name}.{p.name} doc lacks a unit"
    takes_arm = {c.name for c in registry.CAPABILITIES if c.takes_arm}
    assert {"move_to", "hold", "recover", "release", "check_motion", "get_robot_state"} <= takes_arm
    assert "observe" not in takes_arm and "robot_geometry" not in takes_arm


def _contract_signatures() -> dict[str, list[str]]:
    text = (Path(__file__).resolve().parents[1] / "docs" / "contracts.md").read_text()
    sigs = {}
    for name, args in re.findall(r"`(\w+)\(([^`]*)\)`", text):
        if name in registry.CAPABILITY_BY_NAME and name not in sigs:
            sigs[name] = [a.split("=")[0].strip() for a in args.split(",") if a.strip()]
    return sigs


def test_parameter_names_match_docs_contracts():
    sigs = _contract_signatures()
    assert len(sigs) >= 20
    for name, params in sigs.items():
        assert [p.name for p in registry.get(name).params] == params, name


def test_generated_client_has_the_registry_signatures():
    sent = []
    robot = build_client(lambda n, k: sent.append((n, k)) or {"success": True, "value": 1})
    for c in registry.CAPABILITIES:
        sig = inspect.signature(getattr(robot, c.name))
        assert list(sig.parameters) == [p.name for p in c.params]
        for p in c.params:
            default = sig.parameters[p.name].default
            assert default is inspect.Parameter.empty if p.required else default == p.default
        assert getattr(robot, c.name).__doc__ == c.doc
    r = robot.move_to([0.3, 0.0, 0.2], jaw=None)
    assert isinstance(r, RobotResult) and r.success and r.value == 1 and bool(r)
    assert sent[-1] == (
        "move_to",
        {
            "position": [0.3, 0.0, 0.2],
            "orientation": None,
            "jaw": None,
            "arm": None,
            "speed_m_s": 0.05,
            "duration_s": None,
            "mode": "guarded",
            "force_limit_n": None,
        },
    )
    with pytest.raises(TypeError):
        robot.segment()  # a missing required argument is a plain Python error in the cell
    assert "class Robot" in client_source()


def test_result_dict_attribute_access_and_repr():
    r = RobotResult(
        {"success": False, "failure_category": "contact", "message": "stopped", "value": None}
    )
    assert not r and r.failure_category == "contact"
    assert "FAILED contact" in repr(r)
    with pytest.raises(AttributeError):
        _ = r.nope


def test_task_md_api_section_lists_everything():
    md = api_section_md({"requests": 60})
    for c in registry.CAPABILITIES:
        assert f"robot.{c.signature()}" in md
    for cat in FailureCategory:
        assert f"`{cat.value}`" in md
    assert md.count("(P)") >= 4 and "Budgets: requests 60" in md
    assert md == api_section_md({"requests": 60})  # deterministic


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("move_to", {"position": [0.1, 0.2]}, "exactly 3"),
        ("move_to", {"position": [0.1, float("nan"), 0.2]}, "finite"),
        ("move_to", {"position": [0.1, 0.2, 0.3], "jaw": "open"}, "never both"),
        ("move_to", {}, "needs a position"),
        ("move_to", {"jaw": "wide"}, "open"),
        ("move_to", {"jaw": -0.01}, ">= 0"),
        ("move_to", {"position": [0, 0, 0.2], "orientation": [1, 1, 0, 0]}, "unit quaternion"),
        ("move_to", {"position": [0, 0, 0.2], "mode": "yolo"}, "one of guarded"),
        ("move_to", {"position": [0, 0, 0.2], "speed_m_s": 0}, "> 0"),
        ("move_to", {"position": "0,0,0"}, "list of 3"),
        ("move_to", {"position": [True, 0, 0]}, "number"),
        ("segment", {}, "missing 'text'"),
        ("segment", {"text": "x", "colour": "red"}, "unexpected argument"),
        ("measure_image_points", {"handle": "obs_1", "camera": "head", "points": []}, "non-empty"),
        ("read_motion_trajectory", {"last_n": 2.5}, "integer"),
        ("measure_object_geometry", {"obj": 3}, "detection id"),
    ],
)
def test_validation_rejects_with_an_actionable_message(name, kwargs, match):
    with pytest.raises(InvalidArgumentError, match=match):
        validate_call(registry.get(name), kwargs)


def test_validation_normalises():
    out = validate_call(
        registry.get("move_to"), {"position": (1, 2, 3), "orientation": [2**-0.5, 0, 0, 2**-0.5]}
    )
    assert out["position"] == [1.0, 2.0, 3.0] and out["mode"] == "guarded"
    out = validate_call(
        registry.get("measure_object_geometry"), {"obj": {"id": "det_1"}, "destination": "det_2"}
    )
    assert out["obj"] == "det_1"
    out = validate_call(
        registry.get("select_detection"), {"detection_ids": [{"id": "det_1"}, "det_2"]}
    )
    assert out["detection_ids"] == ["det_1", "det_2"]
    with pytest.raises(UnknownNameError, match="valid: arm"):
        validate_call(registry.get("hold"), {"arm": "left"}, ["arm"])


def test_move_to_both_arms_takes_per_arm_poses():
    cap = registry.get("move_to")
    out = validate_call(
        cap,
        {"position": {"left": [0.3, 0.2, 0.2], "right": (0.3, -0.2, 0.2)}, "arm": "both"},
        ["left", "right"],
    )
    assert out["position"] == {"left": [0.3, 0.2, 0.2], "right": [0.3, -0.2, 0.2]}
    with pytest.raises(UnknownNameError, match="valid: arm"):
        validate_call(cap, {"position": {"arm": [0.3, 0, 0.2]}, "arm": "both"}, ["arm"])
    with pytest.raises(InvalidArgumentError, match="finite"):
        validate_call(
            cap,
            {"position": {"left": [0.3, float("inf"), 0.2], "right": [0.3, 0, 0.2]}, "arm": "both"},
            ["left", "right"],
        )
    with pytest.raises(InvalidArgumentError, match="needs position"):
        validate_call(cap, {"position": [0.3, 0, 0.2], "arm": "both"}, ["left", "right"])
    with pytest.raises(InvalidArgumentError, match="list of 3"):
        validate_call(cap, {"position": {"left": [0.3, 0, 0.2]}, "arm": "left"}, ["left", "right"])
