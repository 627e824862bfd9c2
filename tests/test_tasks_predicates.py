"""Predicates, milestones, features, tracker and completion gates on hand-edited privileged states.

States start as a real ``MujocoBackend.privileged_state()`` and are then edited as dicts to put the
scene into (un)solved configurations; solving by motion is tested in ``test_tasks_motion.py``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.core.privileged import PrivilegedState
from captain_ros.tasks import FEATURE_NAMES, get_task
from captain_ros.tasks.insertion import BLOCK_HEIGHT_M, PEG_HALF_HEIGHT_M
from captain_ros.tasks.pick_place import CUBE_HALF_M, PLATE_HALF_HEIGHT_M
from captain_ros.tasks.two_arm_lift import BOX_HALF_M

F = {n: i for i, n in enumerate(FEATURE_NAMES)}


def initial_state(name: str, seed: int = 3) -> dict[str, Any]:
    """A real initial state of ``name`` in its JSON form (edited below, then parsed with S)."""
    with MujocoBackend(get_task(name).sample(seed)) as b:
        return b.privileged_state().to_dict()


def S(state: dict[str, Any]) -> PrivilegedState:
    """The typed state tasks read."""
    return PrivilegedState.from_dict(state)


def put(s: dict[str, Any], body: str, xyz: Any, held_by: str | None = None) -> None:
    o = s["objects"][body]
    o["position_m"] = list(map(float, xyz))
    o["held"] = held_by is not None
    o["held_by"] = held_by
    o["pad_contacts"] = {a: (2 if a == held_by else 0) for a in s["arms"]}
    if held_by:
        o["ever_held"] = True


def pos(s: dict[str, Any], body: str) -> np.ndarray:
    return np.asarray(s["objects"][body]["position_m"], dtype=float)


def test_pick_place_predicate_milestones_and_features() -> None:
    t = get_task("pick_place")
    s0 = initial_state("pick_place")
    tr = t.tracker()
    tr.update(S(s0))
    x0 = t.features(S(s0), tr)
    assert x0[F["n_goals"]] == 1 and x0[F["frac_satisfied"]] == 0 and x0[F["held"]] == 0
    plate = pos(s0, "plate")
    top = plate[2] + PLATE_HALF_HEIGHT_M + CUBE_HALF_M

    s = copy.deepcopy(s0)  # grasped and lifted 8 cm, tool at the cube
    put(s, "red_cube", pos(s0, "red_cube") + [0, 0, 0.08], held_by="arm")
    s["arms"]["arm"]["tcp_position_m"] = list(pos(s, "red_cube"))
    m = t.milestones(S(s))
    assert m[:3] == [True, True, True] and not t.success(S(s))
    tr.update(S(s))
    x = t.features(S(s), tr)
    assert x[F["held"]] == 1 and x[F["ever_held"]] == 1
    assert x[F["target_lift_m"]] == pytest.approx(0.08, abs=1e-6)
    assert x[F["ee_to_target_m"]] == pytest.approx(0.0, abs=1e-6)

    s = copy.deepcopy(s0)  # placed but still held: not yet success
    put(s, "red_cube", plate[:2].tolist() + [top], held_by="arm")
    assert t.milestones(S(s))[4] and not t.success(S(s))
    put(s, "red_cube", plate[:2].tolist() + [top])  # released
    assert t.success(S(s)) and all(t.milestones(S(s))[3:])
    tr.update(S(s))
    assert (
        t.features(S(s), tr)[F["frac_satisfied"]] == 1 and t.features(S(s), tr)[F["ever_held"]] == 1
    )

    for dx, dz in ((0.05, 0.0), (0.0, 0.03), (0.0, -0.02)):  # off-centre, floating, sunk
        s2 = copy.deepcopy(s)
        put(s2, "red_cube", plate + [dx, 0, PLATE_HALF_HEIGHT_M + CUBE_HALF_M + dz])
        assert not t.success(S(s2)), (dx, dz)
    s2 = copy.deepcopy(s)  # tipped 45 deg onto an edge
    s2["objects"]["red_cube"]["quat_wxyz"] = [np.cos(np.pi / 8), np.sin(np.pi / 8), 0, 0]
    assert not t.success(S(s2))
    # a cube has six bottom faces: turned over by 90 or 180 deg it rests flat, which is success
    for q in ([np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0], [0, 0, 1, 0], [0.5, 0.5, 0.5, 0.5]):
        s2["objects"]["red_cube"]["quat_wxyz"] = q
        assert t.success(S(s2)), q
        assert t.features(S(s2), tr)[F["target_tilt_rad"]] == pytest.approx(0.0, abs=1e-6)


def rec(
    label: str, center: Any, extents: Any, resting: bool = True, dest: dict | None = None
) -> dict:
    c = np.asarray(center, dtype=float)
    return {
        "object_id": "det_1",
        "label": label,
        "center_m": c.tolist(),
        "extents_m": list(extents),
        "yaw_rad": 0.0,
        "shape": "box",
        "radius_m": None,
        "footprint_m": list(extents[:2]),
        "top_z_m": float(c[2] + extents[2] / 2),
        "resting": resting,
        "destination": dest,
    }


def dest(label: str, center: Any, top_z: float, obj_center: Any) -> dict:
    off = np.asarray(obj_center, dtype=float)[:2] - np.asarray(center, dtype=float)[:2]
    return {
        "id": "det_2",
        "label": label,
        "center_m": list(center),
        "top_z_m": top_z,
        "offset_xy_m": off.tolist(),
        "distance_xy_m": float(np.linalg.norm(off)),
    }


def test_pick_place_gate_reads_the_latest_measurement() -> None:
    t = get_task("pick_place")
    plate_c, plate_top = [0.3, 0.1, 0.006], 0.012
    on = [0.31, 0.1, plate_top + 0.0175]
    good = rec("red cube", on, [0.035] * 3, dest=dest("plate", plate_c, plate_top, on))
    assert t.gate_check([good]) == (True, t.gate_check([good])[1])
    ok, why = t.gate_check([])
    assert not ok and "measure_object_geometry" in why
    far = [0.36, 0.1, plate_top + 0.0175]
    ok, why = t.gate_check(
        [good, rec("red cube", far, [0.035] * 3, dest=dest("plate", plate_c, plate_top, far))]
    )
    assert not ok and "from the centre" in why  # the latest one counts
    held = rec(
        "red cube", on, [0.035] * 3, resting=False, dest=dest("plate", plate_c, plate_top, on)
    )
    assert not t.gate_check([held])[0]
    high = [0.31, 0.1, plate_top + 0.0175 + 0.05]
    ok, why = t.gate_check(
        [rec("red cube", high, [0.035] * 3, dest=dest("plate", plate_c, plate_top, high))]
    )
    assert not ok and "sitting" in why
    # a measurement of another object does not count; an unlabelled one (mark_point) may
    blue = rec("blue cube", on, [0.035] * 3, dest=dest("plate", plate_c, plate_top, on))
    assert not t.gate_check([blue])[0]
    anon = dict(good, label="")
    anon["destination"] = dict(good["destination"], label="")
    assert t.gate_check([anon])[0]


def test_stack_and_restack_predicates_and_gates() -> None:
    t = get_task("stack")
    s0 = initial_state("stack")
    assert not t.success(S(s0))
    s = copy.deepcopy(s0)
    b = pos(s0, "blue_cube")
    put(s, "green_cube", b + [0, 0, 2 * CUBE_HALF_M])
    assert t.goals[0].satisfied(S(s)) and not t.success(S(s))
    assert (
        t.features(S(s))[F["n_satisfied"]] == 1 and t.features(S(s))[F["active_goal_frac"]] == 0.5
    )
    put(s, "red_cube", b + [0.005, 0, 4 * CUBE_HALF_M])
    assert t.success(S(s)) and t.milestones(S(s))[-1]
    put(s, "green_cube", b + [0.03, 0, 2 * CUBE_HALF_M])  # middle slid off-centre
    assert not t.success(S(s))

    c = [0.3, 0.0, 0.0175]
    mid = [0.3, 0.0, 0.0525]
    topc = [0.301, 0.0, 0.0875]
    r_top = rec("red cube", topc, [0.035] * 3, dest=dest("green cube", mid, 0.07, topc))
    r_mid = rec("green cube", mid, [0.035] * 3, dest=dest("blue cube", c, 0.035, mid))
    assert t.gate_check([r_mid, r_top])[0]
    assert not t.gate_check([r_top])[0]

    r = get_task("restack")
    s0 = initial_state("restack")
    assert not r.success(S(s0))
    s = copy.deepcopy(s0)
    red = pos(s0, "red_cube")
    put(s, "blue_cube", red + [0.1, 0.0, 0.0])  # blue set down beside red
    assert r.goals[0].satisfied(S(s)) and not r.success(S(s))
    put(s, "red_cube", red + [0.1, 0.0, 2 * CUBE_HALF_M])
    assert r.success(S(s))


def test_open_drawer_predicate_features_and_gate() -> None:
    t = get_task("open_drawer")
    s0 = initial_state("open_drawer")
    tr = t.tracker()
    tr.update(S(s0))
    x = t.features(S(s0), tr)
    assert x[F["active_is_joint"]] == 1 and x[F["joint_position"]] == 0
    s = copy.deepcopy(s0)
    s["joints"]["drawer_slide"] = 0.05
    assert t.milestones(S(s))[2:] == [True, True, False] and not t.success(S(s))
    assert t.features(S(s), tr)[F["joint_progress"]] == pytest.approx(0.5)
    s["joints"]["drawer_slide"] = 0.11
    assert t.success(S(s))
    h0 = rec("yellow handle", [0.35, 0.0, 0.06], [0.02, 0.1, 0.02])
    h1 = rec("yellow handle", [0.24, 0.0, 0.06], [0.02, 0.1, 0.02])
    assert t.gate_check([h0, h1])[0]
    assert not t.gate_check([h0])[0]
    assert not t.gate_check([h0, rec("yellow handle", [0.31, 0.0, 0.06], [0.02, 0.1, 0.02])])[0]
    # against the cabinet: out by 12 cm passes; 74 m away (a runaway fit) is no opening
    from captain_ros.tasks.open_drawer import DEPTH_M, STANDOFF_M

    closed = DEPTH_M / 2 + STANDOFF_M

    def against(dist: float) -> dict:
        return {**h0, "destination": {"id": "cabinet", "center_m": [0.5, 0, 0.05],
                                      "top_z_m": 0.1, "distance_xy_m": dist}}  # fmt: skip

    assert t.gate_check([against(closed + 0.12)]) == (
        True,
        "the handle is 12.0 cm out of the cabinet",
    )
    ok, why = t.gate_check([h0, against(closed + 74.04)])
    assert not ok and "between your first and latest" in why


def test_two_arm_lift_needs_both_arms_and_height() -> None:
    t = get_task("two_arm_lift")
    s0 = initial_state("two_arm_lift")
    assert set(s0["arms"]) == {"left", "right"}
    s = copy.deepcopy(s0)
    p = pos(s0, "long_box") + [0, 0, 0.09]
    put(s, "long_box", p, held_by="left")
    assert not t.success(S(s))  # one arm only
    s["objects"]["long_box"]["pad_contacts"] = {"left": 2, "right": 2}
    assert t.success(S(s))
    put(s, "long_box", pos(s0, "long_box") + [0, 0, 0.045])
    s["objects"]["long_box"]["pad_contacts"] = {"left": 2, "right": 2}
    assert t.milestones(S(s))[3] and not t.success(S(s))
    x = t.features(S(s))
    assert x[F["ee1_x_m"]] != 0  # both arms' tool points are features on the dual rig
    top = BOX_HALF_M[2] * 2 + 0.09
    assert t.gate_check(
        [rec("green box", [0.3, 0, top - BOX_HALF_M[2]], [0.035, 0.32, 0.035], resting=False)]
    )[0]
    assert not t.gate_check([rec("green box", [0.3, 0, 0.0175], [0.035, 0.32, 0.035])])[0]


def test_insertion_predicate_and_gate() -> None:
    t = get_task("insertion")
    s0 = initial_state("insertion")
    s = copy.deepcopy(s0)
    hb = pos(s0, "hole_block")
    put(s, "peg", hb + [0.002, 0, PEG_HALF_HEIGHT_M + 0.0005])  # resting on the table in the hole
    assert t.success(S(s))
    put(s, "peg", hb + [0.002, 0, PEG_HALF_HEIGHT_M + BLOCK_HEIGHT_M])  # standing on the rim
    assert not t.success(S(s)) and t.milestones(S(s))[3]
    put(s, "peg", hb + [0.05, 0, PEG_HALF_HEIGHT_M])
    assert not t.success(S(s))
    blk_top = BLOCK_HEIGHT_M
    peg_c = [0.3, 0.1, PEG_HALF_HEIGHT_M]
    inside = rec(
        "blue peg",
        peg_c,
        [0.025, 0.025, 2 * PEG_HALF_HEIGHT_M],
        dest=dest("orange block", [0.3, 0.1, 0.0175], blk_top, peg_c),
    )
    assert t.gate_check([inside])[0]
    above = [0.3, 0.1, PEG_HALF_HEIGHT_M + BLOCK_HEIGHT_M]
    on_rim = rec(
        "blue peg",
        above,
        [0.025, 0.025, 2 * PEG_HALF_HEIGHT_M],
        dest=dest("orange block", [0.3, 0.1, 0.0175], blk_top, above),
    )
    assert not t.gate_check([on_rim])[0]


def test_tracker_remembers_ever_held_and_climbs_the_ladder_once() -> None:
    t = get_task("pick_place")
    s0 = initial_state("pick_place")
    for o in s0["objects"].values():
        o.pop("ever_held", None)  # rely on the tracker's own memory
    tr = t.tracker()
    tr.update(S(s0))
    s = copy.deepcopy(s0)
    put(s, "red_cube", pos(s0, "red_cube") + [0, 0, 0.06], held_by="arm")
    s["arms"]["arm"]["tcp_position_m"] = list(pos(s, "red_cube"))
    tr.update(S(s))
    assert tr.ladder == 3 and "red_cube" in tr.ever_held
    snap = tr.snapshot()
    s3 = copy.deepcopy(s0)
    tr.update(S(s3))  # dropped back: held is gone, ever-held stays, the ladder does not fall
    x = t.features(S(s3), tr)
    assert x[F["held"]] == 0 and x[F["ever_held"]] == 1 and tr.ladder == 3
    tr2 = t.tracker()
    tr2.restore(snap)
    assert tr2.ladder == 3 and tr2.ever_held == {"red_cube"}


def test_final_rung_drops_placement_rungs_that_no_longer_hold() -> None:
    t = get_task("pick_place")
    assert t.persistent_milestones <= set(t.milestone_names)
    s0 = initial_state("pick_place")
    tr = t.tracker()
    tr.update(S(s0))
    plate = pos(s0, "plate")
    s = copy.deepcopy(s0)
    put(s, "red_cube", pos(s0, "red_cube") + [0, 0, 0.07], held_by="arm")
    s["arms"]["arm"]["tcp_position_m"] = list(pos(s, "red_cube"))
    tr.update(S(s))
    put(s, "red_cube", plate + [0, 0, PLATE_HALF_HEIGHT_M + CUBE_HALF_M])
    tr.update(S(s))
    assert tr.ladder == 6 and tr.final_rung(S(s)) == 6
    knocked = copy.deepcopy(s)  # the cube later fell off the plate: placement rungs are lost
    put(knocked, "red_cube", plate + [0.12, 0, PLATE_HALF_HEIGHT_M + CUBE_HALF_M - 0.012])
    assert tr.final_rung(S(knocked)) == 3  # reached, grasped, lifted still count
