"""The typed privileged state: validation, JSON round trip, and one schema for every backend."""

from __future__ import annotations

import numpy as np
import pytest

from captain_ros.backends import make_backend
from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.core.privileged import ArmTruth, ObjectTruth, PrivilegedState
from captain_ros.tasks import get_task


def test_object_truth_validates_and_derives() -> None:
    o = ObjectTruth([0.3, 0.0, 0.02], held_by="arm", pad_contacts={"arm": 2, "left": 1})
    assert o.held and o.held_by_arm("arm") and not o.held_by_arm("left")
    assert o.tilt_rad() == pytest.approx(0.0)
    with pytest.raises(ValueError):
        o.position_m[0] = 1.0  # read-only
    with pytest.raises(InvalidArgumentError):
        ObjectTruth([0.0, float("nan"), 0.0])
    with pytest.raises(InvalidArgumentError):
        ObjectTruth([0.0, 0.0])
    # a cube on its side is tilted by 90 deg, but lies flat on a face
    side = ObjectTruth([0, 0, 0], quat_wxyz=[np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0])
    assert side.tilt_rad() == pytest.approx(np.pi / 2) and side.tilt_rad(
        any_face=True
    ) == pytest.approx(0.0)


def test_partial_hand_written_states_take_documented_defaults() -> None:
    s = PrivilegedState.from_dict(
        {
            "objects": {"cube": {"position_m": [0.1, 0.2, 0.3], "pad_contacts": {"arm": 2}}},
            "arms": {"arm": {"tcp_position_m": [0, 0, 0.1]}},
        }
    )
    assert s.object("cube").held_by == "arm" and s.object("cube").initial_position_m is None
    assert s.arm("arm").jaw_opening_m == 0.0 and not s.arm("arm").holding
    assert s.joint("drawer_slide", 0.0) == 0.0
    with pytest.raises(UnknownNameError):
        s.joint("drawer_slide")
    with pytest.raises(UnknownNameError):
        s.object("plate")
    with pytest.raises(InvalidArgumentError):
        PrivilegedState.from_dict({"objects": {"cube": {"quat_wxyz": [1, 0, 0, 0]}}})
    with pytest.raises(InvalidArgumentError):
        PrivilegedState.from_dict(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_round_trip_is_exact() -> None:
    s = PrivilegedState(
        1.5,
        {
            "c": ObjectTruth(
                [0.1, 0.2, 0.3], [0.0, 0.0, 1.0, 0.0], [0.1, 0.2, 0.3], touching=("table",)
            )
        },
        {"arm": ArmTruth([0.2, 0.0, 0.1], q_rad=np.arange(6) / 7, held_object=None)},
        {"slide": 0.05},
    )
    assert PrivilegedState.from_dict(s.to_dict()) == s
    assert s != PrivilegedState.from_dict({**s.to_dict(), "time_s": 1.6})


@pytest.mark.parametrize("backend", ["fake", "mujoco"])
def test_every_backend_returns_the_same_typed_schema(backend: str) -> None:
    task = get_task("pick_place")
    with make_backend(backend, task.sample(5)) as b:
        s = b.privileged_state()
    assert isinstance(s, PrivilegedState)
    d = s.to_dict()
    assert set(d) == {"time_s", "objects", "arms", "joints", "bodies"}
    obj_keys = {
        "position_m",
        "quat_wxyz",
        "initial_position_m",
        "initial_quat_wxyz",
        "held_by",
        "held",
        "ever_held",
        "pad_contacts",
        "touching",
        "size_m",
    }
    assert all(set(o) == obj_keys for o in d["objects"].values())
    assert set(d["objects"]) >= {"red_cube", "plate"}
    assert all(
        set(a)
        == {
            "tcp_position_m",
            "tcp_quat_wxyz",
            "q_rad",
            "jaw_opening_m",
            "jaw_command_m",
            "holding",
            "held_object",
            "contact_force_n",
        }
        for a in d["arms"].values()
    )
    assert task.success(s) is False
