"""The scripted expert taking over mid-episode and handing back; and resuming after its own
session was lost. Host-only checks first, then real MuJoCo episodes through the harness with the
real sandboxed session (slow)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.evaluation.episode import build_robot
from captain_ros.harness.episode.loop import run_episode
from captain_ros.harness.sandbox.session import PythonSession
from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.policy.expert import ScriptedExpert, Segment, parse_notes
from captain_ros.policy.expert.expert import HAND_BACK
from captain_ros.policy.factory import make_policy
from captain_ros.policy.replay import ReplayPolicy
from captain_ros.policy.scripted import ScriptedPolicy, TakeoverPolicy

HAPPY = {
    "start": {"ready": True},
    "settle": {"held": {"arm": False}},
    "verify": {"dist": 0.2, "resting": True, "gap": 0.0},
    "perceive": {"found": {"red_cube": True, "plate": True}},
    "descend": {"down_ok": True},
    "close_lift": {"held": True},
    "place": {"placed": True},
}


def _answer(code: str, overrides: dict[str, Any] | None = None) -> str:
    last = code.strip().splitlines()[-1].strip()
    name = last.split("(")[1].lstrip("*") if "note(" in last else ""
    return "NOTE " + json.dumps({**HAPPY, **(overrides or {})}.get(name, {"ok": True}))


def test_segments_are_validated():
    with pytest.raises(InvalidArgumentError):
        Segment(0)
    with pytest.raises(InvalidArgumentError):
        Segment(True)  # type: ignore[arg-type]
    with pytest.raises(UnknownNameError, match="teleport"):
        Segment(5, frozenset({"move_to", "teleport"}))
    assert Segment(5, frozenset({"move_to"})).allows({"move_to"})
    assert not Segment(5, frozenset({"move_to"})).allows({"move_to", "finish"})


def test_the_takeover_sets_up_its_own_state_beside_the_foreign_one():
    e = ScriptedExpert.takeover("pick_place", "put the red cube on the plate", max_requests=20)
    first = e.next_cell(None)
    lines = first.code.splitlines()
    assert lines[0] == "_foreign = dict(globals())"  # kept before I define anything
    assert "S = State(robot, 100)" in first.code and lines[-1] == "note(**start(S, rest_poses(S)))"
    assert "def rest_poses(" in first.code
    compile(first.code, "<takeover>", "exec")
    second = e.next_cell('NOTE {"ready": true}')
    assert second.code.rstrip().endswith("note(**settle(S))")  # take stock before anything else
    third = e.next_cell('NOTE {"held": {"arm": false}}')
    assert "note(**verify(S, 'red_cube'" in third.code  # is it done already?


def test_the_segment_ends_at_max_requests_with_the_hand_back_in_its_last_cell():
    e = ScriptedExpert.takeover("pick_place", max_requests=4)
    cells, out = [], None
    while (cell := e.next_cell(out)) is not None:
        cells.append(cell.code)
        out = _answer(cell.code)
    assert len(cells) == 4 and e.cells == 4 and e.handed_back and e.done
    assert cells[-1].startswith("try:\n") and cells[-1].rstrip().endswith(
        "\n".join("    " + ln for ln in HAND_BACK.splitlines())
    )
    assert not any(HAND_BACK in c for c in cells[:-1])
    compile(cells[-1], "<last>", "exec")
    assert e.next_cell(out) is None


def test_a_call_the_contract_does_not_allow_ends_the_segment_early():
    # no finish(): the expert may move and look, but declaring completion is left to the student
    allowed = {
        "observe",
        "segment",
        "mark_point",
        "measure_object_geometry",
        "move_to",
        "check_motion",
        "get_robot_state",
        "gripper_state",
        "robot_geometry",
        "release",
        "hold",
        "recover",
    }
    e = ScriptedExpert.takeover("pick_place", max_requests=30, allowed_symbols=allowed)
    cells, out = [], None
    while (cell := e.next_cell(out)) is not None:
        cells.append(cell.code)
        out = _answer(cell.code, {"verify": {"dist": 0.004, "resting": True, "gap": 0.0}})
    assert not any("finish(S" in c for c in cells)
    assert cells[-1] == HAND_BACK and e.handed_back  # its own cell: the plan stopped before finish
    # without even the rig geometry the expert cannot set up: it hands back at once
    e = ScriptedExpert.takeover("pick_place", max_requests=30, allowed_symbols={"move_to"})
    assert e.next_cell(None) is None and e.done and e.cells == 0


def test_every_task_can_be_taken_over_and_every_cell_compiles():
    for task in ("pick_place", "stack", "restack", "open_drawer", "two_arm_lift", "insertion"):
        e = ScriptedExpert.takeover(task, max_requests=40)
        out = None
        while (cell := e.next_cell(out)) is not None:
            compile(cell.code, f"<{task}>", "exec")
            out = _answer(cell.code)
        assert e.done and e.cells <= 40


# --- real episodes -----------------------------------------------------------------------
def _run(
    task_name: str, seed: int, policy: Policy, out: Path, session: PythonSession | None = None
) -> Any:
    task, backend, service = build_robot(task_name, seed)
    try:
        return run_episode(
            task,
            seed,
            service,
            policy,
            None,
            out,
            session=session,
            host_success=lambda: bool(task.success(backend.privileged_state())),
        )
    finally:
        backend.close()


def _cells(folder: Path) -> list[tuple[int, str, str]]:
    out = []
    for line in (folder / "trajectory.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for c in rec.get("calls", []) if rec.get("type") == "request" else []:
            out.append((rec["t"], c["code"], c["output"]))
    return out


@pytest.mark.slow
def test_hand_back_restores_the_students_names_and_keeps_its_session(tmp_path):
    student = ReplayPolicy(
        [
            {"code": "go = 'my go'\nS = ['my', 'S']\nkept = 42\nprint('ok')"},
            {
                "code": "print('NOTE ' + __import__('json').dumps({'go': go, 'S': S, 'kept': kept, "
                "'settle': callable(globals().get('settle')), 'foreign': '_foreign' in globals()}))"
            },
        ]
    )
    pol = TakeoverPolicy(student, at_request=2, max_requests=3)
    hs = _run("pick_place", 0, pol, tmp_path / "ep")
    cells = _cells(tmp_path / "ep")
    assert pol.segment_requests == [2, 3, 4] and pol.expert is not None and pol.expert.handed_back
    assert [t for t, _, _ in cells] == [1, 2, 3, 4, 5] and hs.requests == 6  # 6: the replay ran out
    during = parse_notes(cells[2][2])
    assert during["held"] == {"arm": False}  # the expert's own S worked during its segment
    after = parse_notes(cells[4][2])
    assert after == {"go": "my go", "S": ["my", "S"], "kept": 42, "settle": True, "foreign": False}


@pytest.mark.slow
def test_the_expert_repairs_a_faulty_step_mid_episode(tmp_path):
    """pick_place train seed 0: the faulty expert lets the cube drop right after lifting it
    (request 5); the expert takes over at request 6 and puts it on the plate."""
    faulty = make_policy("scripted-faulty:premature_release=1")
    alone = _run(
        "pick_place", 0, make_policy("scripted-faulty:premature_release=1"), tmp_path / "alone"
    )
    pol = TakeoverPolicy(faulty, at_request=6, max_requests=15)
    hs = _run("pick_place", 0, pol, tmp_path / "repaired")
    assert [e.request for e in faulty.events] == [5] and faulty.events[
        0
    ].fault == "premature_release"
    cells = _cells(tmp_path / "repaired")
    assert "let_go(S)" in cells[4][1] and cells[5][1].startswith("_foreign = dict(globals())")
    assert hs.host_success and hs.outcome == "success_with_finish"
    assert pol.segment_requests[0] == 6 and len(pol.segment_requests) <= 15
    assert (
        alone.requests > 8
    )  # alone it needed a corrective round (or failed); repaired it finishes


@pytest.mark.slow
def test_the_expert_takes_over_a_box_held_by_one_arm(tmp_path):
    """two_arm_lift train seed 0: after lifting, the left jaw lets go (the faulty expert's
    premature release); the expert takes over, lets go with both, grasps again and lifts."""
    faulty = make_policy("scripted-faulty:premature_release=1")
    pol = TakeoverPolicy(faulty, at_request=7, max_requests=20)
    hs = _run("two_arm_lift", 0, pol, tmp_path / "box")
    assert [(e.fault, e.call, e.request) for e in faulty.events] == [
        ("premature_release", "lift_box", 6)
    ]
    cells = _cells(tmp_path / "box")
    took = next(i for i, (_, code, _) in enumerate(cells) if code.startswith("_foreign"))
    assert any("note(**hands(S))" in code for _, code, _ in cells[took:])
    assert hs.host_success and hs.outcome == "success_with_finish"


class _Killer(Policy):
    """The scripted expert, with its sandboxed session killed just before request ``at``."""

    name = "scripted+kill"

    def __init__(self, session: PythonSession, at: int) -> None:
        self.inner, self.session, self.at, self.n = ScriptedPolicy(), session, at, 0

    def reset(self, task_name: str, seed: int) -> None:
        self.inner.reset(task_name, seed)
        self.n = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        self.n += 1
        if self.n == self.at and self.session.pid:
            os.kill(self.session.pid, signal.SIGKILL)
            while self.session.alive():  # wait for the death itself
                pass
        return self.inner.act(messages, tools)


@pytest.mark.slow
def test_a_restarted_session_is_detected_and_the_task_resumed(tmp_path):
    """pick_place train seed 0: the session dies after the cube is lifted (before request 5)."""
    with PythonSession(tmp_path / "ws") as sess:
        pol = _Killer(sess, at=5)
        hs = _run("pick_place", 0, pol, tmp_path / "ep", session=sess)
    cells = _cells(tmp_path / "ep")
    expert = pol.inner.expert
    assert expert is not None and expert.restarts == 1 and sess.restarts == 1
    probe = next(
        i for i, (_, code, _) in enumerate(cells) if code.startswith('import json\nprint("NOTE')
    )
    assert parse_notes(cells[probe][2]) == {"epoch": None}
    assert "S = State(robot, 2)" in cells[probe + 1][1] and "start(S, poses=" in cells[probe + 1][1]
    assert hs.host_success and hs.outcome == "success_with_finish"


@pytest.mark.slow
def test_the_expert_takes_over_a_drawer_handle_already_held(tmp_path):
    """open_drawer train seed 70: the expert has grasped the handle (request 5) when the takeover
    starts. The jaw hides the bar, so a fresh look at it is a fragment; the takeover pulls along
    its jaw's closing axis (the grasp's pull direction), opens the drawer and finishes. (Before,
    it pulled from the cabinet centre toward the fragment, 19 deg off, and its opening check, a
    distance from that fragment, passed: a false finish.)"""
    pol = TakeoverPolicy(make_policy("scripted"), at_request=6, max_requests=15)
    hs = _run("open_drawer", 70, pol, tmp_path / "drawer")
    cells = _cells(tmp_path / "drawer")
    grasp = parse_notes(next(out for t, code, out in cells if t == 5 and "grab_handle" in code))
    assert grasp["held"] is True
    axis = parse_notes(next(out for _, code, out in cells if "pull_axis(S)" in code))
    cos = sum(a * b for a, b in zip(axis["u"], grasp["u"], strict=True))
    assert cos > 0.985  # within 10 deg of the direction the grasp was aimed along
    assert hs.host_success and hs.outcome == "success_with_finish"
