"""Hostile arguments to every capability of the registry get the right category, at once.

The real stack (FakeBackend + MotionService + PerceptionService behind a RobotService) is called
with each capability's required parameters set to plausible values, then with one parameter (or
one element of a vector parameter) replaced by a hostile value: huge, infinite or NaN numbers,
integers past 2**64, a million-element list, objects whose ``__float__``/``__index__``/``__len__``
/``tolist`` raise, 900-deep nesting, a million-character string, lone surrogates and control
characters, and unknown keywords. Each must be answered with ``invalid_argument`` (never
``internal_error``, never an exception) well inside a second, while the plausible call itself is
not an ``invalid_argument`` (so the hostile value is what is refused). Magnitudes that drive
planning work (far targets, crawling speeds) are answered without that work, and every call
stops at its deadline.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from harness_helpers import make_stack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from captain_ros.api import registry
from captain_ros.api.deadlines import call_deadline_s
from captain_ros.api.service import RobotService
from captain_ros.core import deadline
from captain_ros.core.result import FailureCategory, Result
from captain_ros.harness.episode.budgets import Budgets, BudgetTracker
from captain_ros.harness.episode.calls import EpisodeCalls
from captain_ros.harness.episode.gate import CompletionGate

INVALID = FailureCategory.INVALID_ARGUMENT
FAST_S = 1.0  # a refusal costs validation only (measured: ~0.1 ms, benchmarks/results/trust.md)


class EvilFloat:
    def __float__(self) -> float:
        raise RuntimeError("evil __float__")


class EvilIndex:
    def __index__(self) -> int:
        raise RuntimeError("evil __index__")


class EvilTolist:
    def tolist(self) -> list[float]:
        raise RuntimeError("evil tolist")


class EvilLen(list):
    def __len__(self) -> int:
        raise RuntimeError("evil __len__")


def _deep(n: int, leaf: Any, *, dicts: bool) -> Any:
    for _ in range(n):
        leaf = {"id": leaf} if dicts else [leaf]
    return leaf


SCALARS: dict[str, Any] = {
    "1e308": 1e308,
    "-1e308": -1e308,
    "inf": float("inf"),
    "-inf": float("-inf"),
    "nan": float("nan"),
    "2**64": 2**64,
    "-2**64": -(2**64),
    "1e12": 1e12,
    "evil __float__": EvilFloat(),
    "evil __index__": EvilIndex(),
    "evil tolist": EvilTolist(),
}
WHOLE: dict[str, Any] = {
    **SCALARS,
    "10**6 list": [0.1] * 10**6,
    "evil __len__": EvilLen([0.1, 0.2, 0.3]),
    "dict 900 deep": _deep(900, "det_1", dicts=True),
    "list 900 deep": _deep(900, 0.1, dicts=False),
    "10**6 chars": "a" * 10**6,
    "lone surrogate": "red \ud800 block",
    "NUL": "red\x00block",
    "escape sequence": "red \x1b[31m block",
    "C1 control": "red\x85block",
}
PLAUSIBLE: dict[str, Any] = {
    "position": [0.3, 0.0, 0.25],
    "quat": [1.0, 0.0, 0.0, 0.0],
    "float": 10.0,
    "pos_float": 0.1,
    "int": 5,
    "bool": True,
    "jaw": 0.02,
    "arm": "arm",
    "str_list": ["det_1"],
    "points": [[10.0, 12.0]],
    "obj": "det_1",
}
PLAUSIBLE_STR = {
    "text": "red block",
    "camera": "head",
    "handle": "obs_1",
    "label": "x",
    "granularity": "object",
    "by": "score",
    "mode": "guarded",
    "from_frame": "world",
    "to_frame": "world",
    "summary": "done",
}


def plausible(cap: registry.Capability, param: str | None = None) -> dict[str, Any]:
    """The capability's required parameters (and ``param``) set to plausible values."""
    out: dict[str, Any] = {}
    for p in cap.params:
        if p.required or p.name == param:
            out[p.name] = PLAUSIBLE_STR.get(
                p.name, p.choices[0] if p.choices else PLAUSIBLE.get(p.kind)
            )
    if cap.name == "move_to" and param != "jaw":
        out["position"] = PLAUSIBLE["position"]
    return out


VALUES = {**WHOLE, "1": "1"}
CASES = [(c.name, p.name, v) for c in registry.CAPABILITIES for p in c.params for v in WHOLE]
CASES += [
    (c.name, f"{p.name}[1]", v)
    for c in registry.CAPABILITIES
    for p in c.params
    if p.kind in ("position", "quat", "points")
    for v in SCALARS
]
CASES += [(c.name, "bogus", "1") for c in registry.CAPABILITIES]  # unknown keywords
CASES += [(c.name, "\ud800", "1") for c in registry.CAPABILITIES]
"""(capability, parameter or ``param[i]`` or unknown keyword, key of the value in VALUES)."""


@pytest.fixture(scope="module")
def stack() -> RobotService:
    return make_stack(image_size=(48, 64))[1]


@pytest.fixture(scope="module")
def baselines(stack: RobotService) -> dict[tuple[str, str], Result]:
    """The plausible call of each (capability, parameter): never refused as invalid."""
    out = {}
    for cap in registry.CAPABILITIES:
        for name in [None, *(p.name for p in cap.params)]:
            out[cap.name, name or ""] = stack.call(cap.name, plausible(cap, name))
    return out


def _call(stack: RobotService, name: str, where: str, value: Any) -> tuple[Result, float, str]:
    cap = registry.get(name)
    base_param = (
        where.split("[")[0] if where in {p.name for p in cap.params} or "[" in where else ""
    )
    kwargs = plausible(cap, base_param or None)
    if "[" in where:  # one element of a vector parameter
        vec = [list(x) if isinstance(x, list) else x for x in kwargs[base_param]]
        if cap.param(base_param).kind == "points":
            vec[0][1] = value
        else:
            vec[1] = value
        kwargs[base_param] = vec
    else:
        kwargs[where] = value
    t0 = time.perf_counter()
    res = stack.call(name, kwargs)
    return res, time.perf_counter() - t0, base_param


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(case=st.sampled_from(CASES))
def test_hostile_arguments_are_invalid_arguments_at_once(stack, baselines, case):
    name, where, key = case
    res, dt, param = _call(stack, name, where, VALUES[key])
    assert isinstance(res, Result) and res.receipt
    assert res.failure_category == INVALID, (name, where, res.failure_category, res.message)
    assert not res.executed and dt < FAST_S, (name, where, dt)
    base = baselines[name, param]
    assert base.failure_category != INVALID, (name, param, base.message)  # the value is refused


def test_every_case_of_the_registry_is_covered():
    """The sampled cases span every parameter of every capability (400 examples of ~1,000)."""
    params = {(c.name, p.name) for c in registry.CAPABILITIES for p in c.params}
    assert params == {(n, w) for n, w, _ in CASES if w in {p.name for p in registry.get(n).params}}


@pytest.mark.parametrize(
    "name",
    ["check_motion", "move_to", "preview_motion", "inspect_contact_geometry", "transform_pose"],
)
@pytest.mark.parametrize("x", [1e308, -1e308, 1e12, 2**64, 1000.0])
def test_far_positions_are_refused_before_any_planning(stack, name, x):
    cap = registry.get(name)
    kwargs = {**plausible(cap), "position": [x, 0.0, 0.2]}
    t0 = time.perf_counter()
    res = stack.call(name, kwargs)
    assert time.perf_counter() - t0 < FAST_S
    assert res.failure_category == INVALID and "out of range" in res.message, res.message


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(x=st.floats(1.5, 100.0), speed=st.floats(1e-300, 5e-4))
def test_magnitudes_that_drive_planning_work_are_bounded(stack, x, speed):
    """A target outside the workspace, or a sweep longer than 120 s, is refused before the
    per-tick IK: check_motion took ~9 ms per metre and ran until killed at x = 1e12."""
    for name, kwargs in (
        ("check_motion", {"position": [x, 0.0, 0.2]}),
        ("preview_motion", {"position": [x, 0.0, 0.2]}),
        ("preview_motion", {"position": [0.3, 0.1, 0.2], "speed_m_s": speed}),
        ("move_to", {"position": [0.3, 0.1, 0.2], "speed_m_s": speed}),
        ("move_to", {"position": [x, 0.0, 0.2], "speed_m_s": speed}),
    ):
        t0 = time.perf_counter()
        res = stack.call(name, kwargs)
        assert time.perf_counter() - t0 < FAST_S, (name, kwargs)
        verdict = (res.value or {}).get("category") if res.success else res.failure_category
        assert verdict in ("workspace", "unreachable", INVALID), (name, kwargs, res.message)
        assert not res.executed


def test_a_call_stops_at_its_deadline_and_inside_the_wall_budget():
    backend, svc = make_stack(image_size=(48, 64))
    servo = backend.servo

    def slow_servo(*args: Any, **kwargs: Any) -> Any:  # 2 ms per 20 ms tick, whatever the load:
        time.sleep(0.002)  # a 20 s hold takes > 2 s of wall time, past the deadlines below
        return servo(*args, **kwargs)

    backend.servo = slow_servo  # type: ignore[method-assign]
    cap = registry.get("move_to")
    assert call_deadline_s(cap, {"position": [0.3, 0.0, 0.2], "duration_s": 10.0}) == 60.0 + 30.0
    assert call_deadline_s(registry.get("hold"), {"duration_s": 30.0}) == 60.0 + 90.0
    start = backend.ee_pose("arm").position_m.copy()
    with deadline.scope(0.3, "a test's 0.3 s deadline"):
        t0 = time.perf_counter()
        res = svc.call("move_to", {"position": [0.3, 0.15, 0.2], "duration_s": 59.0})
        dt = time.perf_counter() - t0
    if res.executed:  # stopped in the tick loop: moved part of the way (none when the deadline
        # arrives at the first tick, as on a loaded machine), holds there
        assert (
            res.failure_category == FailureCategory.TIMEOUT
            and res.value["stop_reason"] == "deadline"
        )
        assert 0 <= res.value["executed_distance_m"] < res.value["planned_distance_m"]
    else:  # stopped while planning the 2,950 ticks: nothing moved
        assert res.failure_category == FailureCategory.TIMEOUT
        assert (backend.ee_pose("arm").position_m == start).all()
    assert "0.3 s deadline" in res.message and dt < 0.3 + FAST_S, (dt, res.message)
    with deadline.scope(0.2, "outer"):
        res = svc.call("hold", {"duration_s": 30.0})
    assert res.failure_category == FailureCategory.TIMEOUT and res.executed
    # the episode's wall budget is the outer deadline of every call the harness forwards
    now = [0.0]
    tracker = BudgetTracker(Budgets(max_wall_s=100.0), clock=lambda: now[0])
    calls = EpisodeCalls(
        svc, tracker, CompletionGate(lambda m: (True, "")), episode_dir=backend_dir()
    )
    now[0] = 100.0 - 0.3  # 0.3 s of the episode left
    t0 = time.perf_counter()
    res = calls.execute("hold", {"duration_s": 20.0})
    assert res.failure_category == FailureCategory.TIMEOUT and "wall-time budget" in res.message
    assert time.perf_counter() - t0 < 0.3 + FAST_S
    res = calls.execute("segment", {"text": "red \ud800"})  # refused by the harness itself
    assert res.failure_category == INVALID and "surrogate" in res.message


def backend_dir():
    import tempfile
    from pathlib import Path

    return Path(tempfile.mkdtemp(prefix="hostile_"))
