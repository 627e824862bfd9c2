"""The scripted expert in real MuJoCo episodes, on training seeds where it once failed.

Each case is a behaviour the main job relies on: the handle grasp finds the bar although the
measured handle centre is biased by its posts (open_drawer 15), the retreat after pulling does not
push the drawer shut again (open_drawer 48), the retreat after the last placement does not
knock the tower over (stack 6), a support the arm hides keeps its measurement (stack 47), and a
tower under the ready pose is verified with the arm aside (stack 83).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from captain_ros.core.privileged import PrivilegedState
from captain_ros.evaluation.episode import build_robot
from captain_ros.harness.episode.loop import run_episode
from captain_ros.harness.episode.observers import CallEvent, EpisodeObserver
from captain_ros.harness.record.backend_source import BackendPrivileged
from captain_ros.policy.factory import make_policy

pytestmark = pytest.mark.slow


def _episode(task_name: str, seed: int, out: Path) -> tuple[Any, list[dict[str, Any]]]:
    """Run the scripted expert; returns the harness summary and the privileged state after
    every physical robot call (read by the test only, never by the policy)."""
    task, backend, service = build_robot(task_name, seed)
    states: list[PrivilegedState] = []

    class AfterMotion(EpisodeObserver):
        def on_call(self, event: CallEvent) -> None:
            if event.name in ("move_to", "release", "recover"):
                states.append(backend.privileged_state())

    try:
        hs = run_episode(
            task,
            seed,
            service,
            make_policy("scripted"),
            None,
            out / f"{task_name}_{seed}",
            observers=[AfterMotion()],
            privileged=BackendPrivileged(backend),
        )
    finally:
        backend.close()
    return hs, states


def test_drawer_handle_grasp_finds_the_bar_behind_a_biased_centre(tmp_path):
    hs, states = _episode("open_drawer", 15, tmp_path)
    assert hs.outcome == "success_with_finish" and hs.host_success
    assert any(s.object("drawer_handle").held for s in states)


def test_drawer_retreat_does_not_push_the_drawer_shut(tmp_path):
    hs, states = _episode("open_drawer", 48, tmp_path)
    assert hs.outcome == "success_with_finish" and hs.host_success
    slide = [s.joint("drawer_slide") for s in states]
    released = next(
        i
        for i, s in enumerate(states)
        if i and states[i - 1].object("drawer_handle").held and not s.object("drawer_handle").held
    )
    # once let go, the drawer stays where the pull left it (the way home passes over its panel)
    assert max(slide[released:]) - min(slide[released:]) < 0.005
    assert slide[-1] >= 0.10


def test_stack_retreat_leaves_the_tower_standing(tmp_path):
    hs, states = _episode("stack", 6, tmp_path)
    assert hs.outcome == "success_with_finish" and hs.host_success
    red_z = [s.object("red_cube").position_m[2] for s in states]
    on_top = next(
        i for i, z in enumerate(red_z) if z > 0.08 and not states[i].object("red_cube").held
    )
    assert min(red_z[on_top:]) > 0.08  # two 3.5 cm cubes below it until the end


def test_stack_keeps_the_support_measurement_the_arm_hides(tmp_path):
    # with the green cube lifted, the arm hides the blue cube from the head camera: the expert
    # places on the measurement from before the grasp instead of failing on a missing one
    hs, _ = _episode("stack", 47, tmp_path)
    assert hs.outcome == "success_with_finish" and hs.host_success


def test_stack_verifies_a_tower_under_the_ready_pose_with_the_arm_aside(tmp_path):
    # the finished tower stands right under the gripper's ready pose, where the top cube merges
    # with the gripper in the head image: the expert looks again with the arm moved aside
    hs, _ = _episode("stack", 83, tmp_path)
    assert hs.outcome == "success_with_finish" and hs.host_success and hs.strict_success


def test_a_cabinet_seen_edge_on_is_measured_where_it_stands(tmp_path):
    # open_drawer dev seed 909: the head camera's cabinet points once got a least-squares circle of
    # 74 m radius (measured "147 m wide, 73 m away"); the expert then chased a same-coloured
    # distractor as the handle and failed, and a student finished on "the handle is 7404.2 cm out
    # of the cabinet". Now every measurement lies on the table and the expert opens the drawer.
    import json

    hs, _ = _episode("open_drawer", 909, tmp_path)
    assert hs.outcome == "success_with_finish" and hs.host_success
    values = [
        rc["result"]["value"]
        for line in (tmp_path / "open_drawer_909" / "trajectory.jsonl").read_text().splitlines()
        for cell in json.loads(line).get("calls") or []
        for rc in cell.get("robot_calls") or []
        if rc["name"] == "measure_object_geometry" and rc["result"]["success"]
    ]
    assert any("cabinet" in json.dumps(v) for v in values)
    for v in values:
        assert max(v["extents_m"][:2]) < 0.5 and max(abs(x) for x in v["center_m"][:2]) < 1.0, v


def test_a_partial_wrist_view_does_not_move_the_hole(tmp_path):
    # insertion dev seed 912: while the peg was held, the head camera's block detection was refused
    # and the wrist camera saw only part of the block (10.0 x 5.4 cm against 10 x 10), whose centre
    # lay 2 cm from the hole's; `remeasure_block` took it, the peg was set down 3.2 cm off the hole,
    # and a student (greedy and sampled alike) finished on it after two rejections. The fixed block's
    # earlier record now stands against a footprint over 1 cm smaller, and the peg goes in.
    import json

    hs, _ = _episode("insertion", 912, tmp_path)
    assert hs.outcome == "success_with_finish" and hs.strict_success
    notes = [
        json.loads(c["output"].split("\n")[0][len("NOTE ") :])
        for line in (tmp_path / "insertion_912" / "trajectory.jsonl").read_text().splitlines()
        for c in json.loads(line).get("calls") or []
        if c["output"].startswith("NOTE ")
    ]
    checked = [n["block"] for n in notes if "block_ok" in n]  # check_block
    remeasured = [n["block"] for n in notes if set(n) == {"block"}]  # remeasure_block
    assert checked and remeasured
    assert remeasured[0] == checked[0]  # the partial view (0.2894, 0.1644) was not taken
