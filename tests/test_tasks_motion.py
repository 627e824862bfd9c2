"""Every task is solved by MotionService commands (aimed with privileged poses), not by editing state.

For each task and a training and a held-out seed: the predicate is False at the start, the
reference solution (approach, guarded descent, close, lift in manipulation mode, carry, lower,
release - :mod:`captain_ros.tasks.reference`) runs with every motion call succeeding, and the
predicate is True afterwards; the tracker, updated after every call, climbs the whole milestone
ladder in order. One case per task also runs the agent-side check: perception measurements of the
final scene pass the task's completion gate, and measurements of the initial scene do not.
"""

from __future__ import annotations

import numpy as np
import pytest

from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.tasks import get_task
from captain_ros.tasks.reference import SOLVERS, Reference

CASES = [(n, s) for n in SOLVERS for s in (0, 1000)]


def run_reference(name: str, seed: int):
    task = get_task(name)
    backend = MujocoBackend(task.sample(seed))
    ref = Reference(backend)
    tracker = task.tracker()
    tracker.update(backend.privileged_state())
    initial = backend.privileged_state()
    original = ref.call

    def call_and_track(fn: str, **kw):
        res = original(fn, **kw)
        tracker.update(backend.privileged_state())
        return res

    ref.call = call_and_track  # type: ignore[method-assign]
    SOLVERS[name](ref)
    return task, backend, ref, tracker, initial


@pytest.mark.parametrize(("name", "seed"), CASES)
def test_reference_solution_by_motion_commands_solves_the_task(name: str, seed: int) -> None:
    task, backend, ref, tracker, initial = run_reference(name, seed)
    final = backend.privileged_state()
    assert not task.success(initial)
    assert task.success(final), "\n".join(ref.log[-8:])
    assert any(line.startswith("move_to") for line in ref.log)
    # the ladder was climbed in order, to the top
    assert tracker.ladder == len(task.milestone_names), (tracker.milestones_ever, tracker.ladder)
    assert tracker.final_rung(final) == len(task.milestone_names)
    x = task.features(final, tracker)
    assert x[task.feature_names.index("frac_satisfied")] == 1.0
    if name != "open_drawer":
        assert x[task.feature_names.index("ever_held")] == 1.0
    backend.close()


PROMPTS = {
    "pick_place": [("red cube", "plate")],
    "stack": [("green cube", "blue cube"), ("red cube", "green cube")],
    "restack": [("red cube", "blue cube")],
    "insertion": [("{peg} peg", "{block} block")],
    "two_arm_lift": [("{colour} box", None)],
    "open_drawer": [("{colour} handle", None)],
}
GATE_SEEDS = {
    "pick_place": 0,
    "stack": 2,
    "restack": 0,
    "insertion": 0,
    "two_arm_lift": 0,
    "open_drawer": 0,
}


def _words(name: str, seed: int) -> dict[str, str]:
    task = get_task(name)
    if name == "insertion":
        peg, block = task._colours(seed)  # type: ignore[attr-defined]
        return {"peg": peg, "block": block}
    if name == "two_arm_lift":
        return {"colour": task._colour(seed)}  # type: ignore[attr-defined]
    if name == "open_drawer":
        return {"colour": task._handle_colour(seed)}  # type: ignore[attr-defined]
    return {}


def _measure(ps, name: str, words: dict[str, str]) -> list[dict]:
    assert ps.observe().success
    out = []
    for obj, dest in PROMPTS[name]:
        found = ps.segment(obj.format(**words)).value["detections"]
        assert found, obj
        dest_id = None
        if dest:
            dfound = ps.segment(dest.format(**words)).value["detections"]
            assert dfound, dest
            dest_id = dfound[0]["id"]
        res = ps.measure_object_geometry(found[0]["id"], destination=dest_id)
        assert res.success, res.message
        out.append(res.value)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PROMPTS))
def test_agent_measurements_pass_the_gate_only_after_solving(name: str) -> None:
    pytest.importorskip("scipy")
    from captain_ros.perception.service import PerceptionService

    seed = GATE_SEEDS[name]
    task = get_task(name)
    backend = MujocoBackend(task.sample(seed))
    ps = PerceptionService(backend)
    words = _words(name, seed)
    ref = Reference(backend)
    ref.park()  # the home pose hides part of the table from the head camera
    before = _measure(ps, name, words)
    assert not task.gate_check(before)[0]
    SOLVERS[name](ref)
    assert task.success(backend.privileged_state())
    after = _measure(ps, name, words)
    ok, why = task.gate_check(before + after)
    assert ok, why
    assert np.isfinite(after[-1]["top_z_m"])
    backend.close()
