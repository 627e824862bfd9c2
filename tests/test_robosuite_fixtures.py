"""robosuite Door and NutAssemblySquare task adapters: names, scenes, gates and milestones
(no robosuite needed; the episodes themselves are in test_robosuite_episodes.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from captain_ros.backends.robosuite.scene import RobosuiteScene
from captain_ros.core.privileged import ArmTruth, ObjectTruth, PrivilegedState
from captain_ros.tasks import get_task, task_names


def _rec(label: str, c: list[float], ext: list[float], dest: dict[str, Any] | None = None,
         held: bool = False) -> dict[str, Any]:  # fmt: skip
    return {"label": label, "center_m": c, "extents_m": ext, "top_z_m": c[2] + ext[2] / 2,
            "held": held, "destination": dest}  # fmt: skip


def test_names_and_scenes() -> None:
    assert task_names("robosuite")[-2:] == ["robosuite_door", "robosuite_nut_assembly_square"]
    door = get_task("door", "robosuite")
    nut = get_task("nut_assembly_square", "robosuite")
    assert door.name == "robosuite_door" and nut.name == "robosuite_nut_assembly_square"
    s = door.sample(1000)
    assert isinstance(s, RobosuiteScene)
    assert (s.env_name, s.seed, s.object_bodies) == ("Door", 1000, ("door", "handle"))
    n = nut.sample(3)
    assert isinstance(n, RobosuiteScene) and n.objects == {
        "square_nut": "SquareNut_main",
        "square_peg": "peg1",
    }
    assert "lever handle is turned" in door.task_md(1000) and "hinge" in door.task_md(1000)


def test_door_gate_needs_the_handle_moved() -> None:
    door = get_task("door", "robosuite")
    first = _rec("handle", [-0.075, -0.28, 0.28], [0.175, 0.09, 0.045])
    ok, why = door.gate_check([first])
    assert not ok and "before you turn it" in why
    near = _rec("handle", [-0.07, -0.24, 0.28], [0.175, 0.09, 0.045])
    ok, why = door.gate_check([first, near])
    assert not ok and "moved 4.0 cm" in why
    far = _rec("handle", [-0.10, -0.15, 0.28], [0.175, 0.09, 0.045])
    ok, why = door.gate_check([first, far])
    assert ok and "moved 13.2 cm" in why


def test_nut_gate_wants_the_nut_around_the_peg_let_go() -> None:
    nut = get_task("nut_assembly_square", "robosuite")
    ok, why = nut.gate_check([])
    assert not ok and "destination" in why
    dest = {"label": "orange peg", "distance_xy_m": 0.035, "center_m": [0.23, 0.1, 0.065]}
    ok, why = nut.gate_check([_rec("orange nut", [0.2, 0.09, 0.01], [0.09, 0.12, 0.02], dest)])
    assert not ok and "3.5 cm from the peg's axis" in why
    dest = {**dest, "distance_xy_m": 0.004}
    ok, why = nut.gate_check([_rec("orange nut", [0.23, 0.1, 0.01], [0.09, 0.12, 0.02], dest,
                                   held=True)])  # fmt: skip
    assert not ok and "still held" in why
    ok, _ = nut.gate_check([_rec("orange nut", [0.23, 0.1, 0.01], [0.09, 0.12, 0.02], dest)])
    assert ok


def _state(
    objects: dict[str, ObjectTruth], joints: dict[str, float], success: bool
) -> PrivilegedState:
    arm = ArmTruth(tcp_position_m=np.array([-0.1, 0.0, 0.2]), jaw_opening_m=0.08)
    return PrivilegedState(time_s=1.0, arms={"arm": arm}, objects=objects, joints=joints,
                           checks={"robosuite_success": success})  # fmt: skip


def _obj(p: list[float], held: bool = False) -> ObjectTruth:
    return ObjectTruth(position_m=np.array(p), held_by="arm" if held else None, ever_held=held)


def test_milestones_follow_the_joints_and_the_nut() -> None:
    door = get_task("door", "robosuite")
    objs = {"door": _obj([-0.2, -0.34, 0.3]), "handle": _obj([-0.03, -0.37, 0.28])}
    closed = _state(objs, {"Door_hinge": 0.0, "Door_latch_joint": 0.0}, False)
    assert door.milestones(closed) == [False, False, False, False] and not door.success(closed)
    turned = _state(objs, {"Door_hinge": 0.0, "Door_latch_joint": -1.4}, False)
    assert door.milestones(turned)[1] and not door.milestones(turned)[2]
    opened = _state(objs, {"Door_hinge": 0.32, "Door_latch_joint": -1.4}, True)
    assert door.milestones(opened)[1:] == [True, True, True] and door.goals[0].satisfied(opened)
    nut = get_task("nut_assembly_square", "robosuite")
    peg = _obj([0.23, 0.1, 0.03])
    on = _state({"square_nut": _obj([0.232, 0.099, 0.01]), "square_peg": peg}, {}, True)
    assert nut.milestones(on)[2:] == [True, True] and nut.goals[0].satisfied(on)
    above = _state({"square_nut": _obj([0.23, 0.1, 0.16], held=True),
                    "square_peg": peg}, {}, False)  # fmt: skip
    assert nut.milestones(above) == [True, True, True, False] and not nut.goals[0].satisfied(above)
