"""RobotService: dispatch by method name, validation, exception conversion, receipts; never raises."""

from __future__ import annotations

import math

import numpy as np
import pytest
from harness_helpers import make_stack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from captain_ros.api import registry
from captain_ros.api.service import RobotCaller, RobotService
from captain_ros.backends.fake import FakeBackend
from captain_ros.core.errors import (
    EStopError,
    InvalidArgumentError,
    NotSupportedError,
    UnknownNameError,
)
from captain_ros.core.result import RECEIPT_MAX_CHARS, FailureCategory, Result


class TinyMotion:
    """A test-local motion service: records calls, raises on demand."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def move_to(self, **kw):
        self.calls.append(("move_to", kw))
        return Result.ok(
            "moved", {"stop_reason": "reached"}, executed=True, receipt="move_to: reached"
        )

    def hold(self, duration_s=1.0, arm=None):
        raise EStopError("latched by operator")

    def recover(self, distance_m=0.05, arm=None):
        raise RuntimeError("boom")

    def release(self, arm=None):
        return {"not": "a Result"}

    def check_motion(self, position, orientation=None, arm=None):
        raise UnknownNameError("frame", "nowhere", ["world"])

    def preview_motion(self, position, orientation=None, arm=None, speed_m_s=0.05):
        raise NotSupportedError("no previews here")

    def read_motion_trajectory(self, arm=None, last_n=50):
        raise InvalidArgumentError("last_n too large")


class TinyPerception:
    def observe(self, cameras=None):
        return Result.ok("observed", {"handle": "obs_1", "cameras": ["head"]})

    def image(self, handle, camera):
        if handle != "obs_1":
            raise KeyError(handle)
        return np.zeros((4, 5, 3), np.uint8)


@pytest.fixture
def tiny():
    motion = TinyMotion()
    return motion, RobotService(FakeBackend(image_size=(16, 16)), motion, TinyPerception())


def test_dispatch_by_method_name_and_default_receipt(tiny):
    motion, svc = tiny
    assert isinstance(svc, RobotCaller)
    r = svc.call("move_to", {"position": [0.3, 0.0, 0.2]})
    assert r.success and r.executed and r.receipt == "move_to: reached"
    assert (
        motion.calls[0][1]["position"] == [0.3, 0.0, 0.2]
        and motion.calls[0][1]["mode"] == "guarded"
    )
    r = svc.call("observe", {})
    assert r.success and r.receipt.startswith("observe: ok")
    assert set(svc.bound) == {
        "move_to",
        "hold",
        "recover",
        "release",
        "check_motion",
        "preview_motion",
        "read_motion_trajectory",
        "observe",
    }


@pytest.mark.parametrize(
    ("name", "kwargs", "category", "text"),
    [
        ("hold", {}, FailureCategory.ESTOP, "latched"),
        ("recover", {}, FailureCategory.INTERNAL_ERROR, "RuntimeError"),
        ("release", {}, FailureCategory.INTERNAL_ERROR, "not a Result"),
        ("check_motion", {"position": [0, 0, 0]}, FailureCategory.UNKNOWN_ID, "valid: world"),
        ("preview_motion", {"position": [0, 0, 0]}, FailureCategory.NOT_SUPPORTED, "no previews"),
        ("read_motion_trajectory", {}, FailureCategory.INVALID_ARGUMENT, "nothing moved"),
        ("segment", {"text": "red"}, FailureCategory.NOT_SUPPORTED, "not available"),
        ("grasp", {}, FailureCategory.UNKNOWN_ID, "valid: observe"),
        ("move_to", {"position": [1, 2]}, FailureCategory.INVALID_ARGUMENT, "exactly 3"),
        ("hold", {"arm": "left"}, FailureCategory.UNKNOWN_ID, "valid: arm"),
        ("finish", {}, FailureCategory.NOT_SUPPORTED, "harness"),
    ],
)
def test_failures_become_results(tiny, name, kwargs, category, text):
    _, svc = tiny
    r = svc.call(name, kwargs)
    assert not r.success and r.failure_category == category and text in r.message
    assert r.receipt and len(r.receipt) <= RECEIPT_MAX_CHARS


def test_bad_call_shapes_never_raise(tiny):
    _, svc = tiny
    assert svc.call(None, None).failure_category == FailureCategory.UNKNOWN_ID  # type: ignore[arg-type]
    assert (
        svc.call("observe", ["not", "a", "dict"]).failure_category
        == FailureCategory.INVALID_ARGUMENT
    )  # type: ignore[arg-type]
    assert svc.call("observe", None).success


def test_finish_handler_and_image(tiny):
    _, svc = tiny
    svc.finish_handler = lambda summary="": Result.ok("accepted", {"summary": summary})
    assert svc.call("finish", {"summary": "done"}).value == {"summary": "done"}
    assert svc.image("obs_1", "head").shape == (4, 5, 3)
    assert svc.image("obs_9", "head") is None


def test_real_services_bind_every_capability():
    _, svc = make_stack(image_size=(96, 128))
    assert set(svc.bound) == {c.name for c in registry.CAPABILITIES if c.name != "finish"}
    r = svc.call("get_robot_state", {})
    assert r.success and r.receipt
    r = svc.call("move_to", {"position": [0.3, 0.0, 0.25]})
    assert r.success and r.executed, r.message


# --- property test: random arguments for every capability return a Result and never raise ----------
_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.floats(-1.0, 1.0),
    st.integers(-5, 5),
)
_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        _floats,
        st.text(max_size=12),
        st.sampled_from(
            ["det_1", "obs_1", "head", "wrist", "arm", "open", "close", "world", "score"]
        ),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.sampled_from(["id", "u", "x"]), inner, max_size=2),
    ),
    max_leaves=8,
)


def _kwargs_for(cap: registry.Capability):
    names = [p.name for p in cap.params]
    plausible = {
        "position": st.lists(st.floats(-0.2, 0.6), min_size=3, max_size=3),
        "duration_s": st.one_of(st.none(), st.floats(0.01, 2.0)),
        "speed_m_s": st.floats(0.01, 0.5),
        "distance_m": st.floats(0.001, 0.1),
    }
    pieces = {n: st.one_of(_values, plausible.get(n, _values)) for n in names}
    return st.fixed_dictionaries({}, optional={**pieces, "bogus": _values})


@pytest.fixture(scope="module")
def real_stack():
    return make_stack(image_size=(48, 64))


@pytest.mark.parametrize("name", [c.name for c in registry.CAPABILITIES])
def test_random_arguments_return_a_result_and_never_raise(real_stack, name):
    backend, svc = real_stack
    cap = registry.get(name)

    @settings(
        max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
    )
    @given(_kwargs_for(cap))
    def check(kwargs):
        r = svc.call(name, kwargs)
        assert isinstance(r, Result)
        assert r.success == (r.failure_category is None)
        assert len(r.receipt) <= RECEIPT_MAX_CHARS and r.receipt
        d = r.to_dict()
        assert (
            all(not isinstance(v, float) or math.isfinite(v) for v in d["value"].values())
            if isinstance(d["value"], dict)
            else True
        )

    check()
    assert not backend.estopped


def test_two_arm_move_through_the_real_motion_service():
    backend, svc = make_stack(rig="piper_dual", image_size=(48, 64))
    r = svc.call(
        "move_to",
        {
            "position": {"left": [0.3, 0.25, 0.25], "right": [0.3, -0.25, 0.25]},
            "arm": "both",
            "speed_m_s": 0.2,
        },
    )
    assert r.success, r.message
    state = backend.privileged_state()
    assert state.arm("left").tcp_position_m[1] == pytest.approx(0.25, abs=2e-3)
    assert state.arm("right").tcp_position_m[1] == pytest.approx(-0.25, abs=2e-3)
