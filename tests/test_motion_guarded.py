"""MotionService on the MuJoCo PiPER: guarded contact, recover, grasp-and-lift, pre-checks, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.core.result import FailureCategory
from captain_ros.core.scene import SceneSpec
from captain_ros.motion import MotionService

DOWN = [0.0, 0.0, 1.0, 0.0]  # tool z pointing down, fingers closing along world y
CUBE_XY = (0.30, 0.02)
CUBE = (
    f'<body name="cube" pos="{CUBE_XY[0]} {CUBE_XY[1]} 0.02"><freejoint name="cube"/>'
    '<geom type="box" size="0.02 0.02 0.02" rgba="0.9 0.1 0.1 1" mass="0.05"/></body>'
)


def cube_rig(rig: str = "piper") -> tuple[MujocoBackend, MotionService]:
    b = MujocoBackend(SceneSpec(rig=rig, worldbody_xml=CUBE, object_bodies=("cube",), seed=1))
    return b, MotionService(b)


def cube_pos(b: MujocoBackend) -> np.ndarray:
    return np.array(b.privileged_state().object("cube").position_m)


@pytest.fixture(scope="module")
def above_cube() -> tuple[MujocoBackend, MotionService, object]:
    """Tool 8 cm above the cube, pointing down, jaw open; returns a snapshot of that state."""
    b, m = cube_rig()
    r = m.move_to([CUBE_XY[0], CUBE_XY[1], 0.12], DOWN)
    assert r.success, r.message
    return b, m, b.snapshot()


def fresh(above_cube: tuple) -> tuple[MujocoBackend, MotionService]:
    b, _, snap = above_cube
    b.restore(snap)
    return b, MotionService(b)


def test_guarded_descent_stops_at_contact_and_barely_moves_cube(above_cube: tuple) -> None:
    b, m = fresh(above_cube)
    assert m.move_to(jaw="close").success
    p0 = cube_pos(b)
    r = m.move_to(
        [CUBE_XY[0], CUBE_XY[1], 0.035]
    )  # would push the closed fingers 2.5 cm into the cube
    assert not r.success and r.failure_category == FailureCategory.CONTACT and r.executed
    assert r.value["stop_reason"] == "contact" and r.value["peak_force_n"] > 5.0
    assert r.value["executed_distance_m"] < r.value["planned_distance_m"]
    assert np.linalg.norm(cube_pos(b) - p0) < 1e-3
    assert "contact" in r.receipt and len(r.receipt) <= 300
    # recover backs out of contact along the reversed trajectory, starting in contact
    z_contact = b.ee_pose("arm").position_m[2]
    rec = m.recover(0.03)
    assert rec.success, rec.message
    assert b.ee_pose("arm").position_m[2] > z_contact + 0.02
    assert b.contact_force_n("arm") < 0.5
    assert np.linalg.norm(cube_pos(b) - p0) < 1e-3
    traj = m.read_motion_trajectory(last_n=5)
    assert traj.success and len(traj.value["samples"]) == 5


def test_manipulation_grasp_and_lift(above_cube: tuple) -> None:
    b, m = fresh(above_cube)
    assert m.move_to([CUBE_XY[0], CUBE_XY[1], 0.025]).success
    r = m.move_to(jaw="close")
    assert r.success and r.value["holding"] and 0.035 < r.value["jaw_after_m"] < 0.041
    lift = m.move_to([CUBE_XY[0], CUBE_XY[1], 0.10], mode="manipulation")
    assert lift.success, lift.message
    st = b.privileged_state()
    assert st.object("cube").held_by == "arm" and st.object("cube").ever_held
    assert cube_pos(b)[2] > 0.085
    rel = m.release()
    assert rel.success and rel.value["released"]
    m.hold(0.6)
    assert cube_pos(b)[2] < 0.03  # it fell back onto the table
    assert m.release().failure_category == FailureCategory.PRECONDITION


def test_prechecks_reject_and_nothing_moves(above_cube: tuple) -> None:
    b, m = fresh(above_cube)
    cases = [
        (dict(position=[0.30, 0.0, -0.01]), FailureCategory.COLLISION),  # into the table
        (dict(position=[0.70, 0.60, 0.50]), FailureCategory.UNREACHABLE),  # beyond the reach
        (
            dict(position=[0.70, 0.0, 0.05], orientation=DOWN),
            FailureCategory.UNREACHABLE,
        ),  # IK fails
        (
            dict(position=[0.30, 0.0, 0.15], orientation=DOWN),
            FailureCategory.JOINT_LIMIT,
        ),  # needs |J5| > 75 deg
        (dict(position=[2.0, 0.0, 0.1]), FailureCategory.WORKSPACE),
        (dict(position=[np.nan, 0.0, 0.1]), FailureCategory.INVALID_ARGUMENT),
        (
            dict(position=[0.3, 0.0, 0.1], orientation=[1.0, 0.5, 0.0, 0.0]),
            FailureCategory.INVALID_ARGUMENT,
        ),
        (dict(position=[0.3, 0.0]), FailureCategory.INVALID_ARGUMENT),
        (dict(position=[0.3, 0.0, 0.1], jaw="open"), FailureCategory.INVALID_ARGUMENT),
        (dict(position=[0.3, 0.0, 0.1], arm="left"), FailureCategory.UNKNOWN_ID),
        (dict(position=[0.3, 0.0, 0.1], mode="yolo"), FailureCategory.INVALID_ARGUMENT),
        (dict(position=[0.3, 0.0, 0.1], speed_m_s=float("inf")), FailureCategory.INVALID_ARGUMENT),
        (dict(jaw=1.0), FailureCategory.INVALID_ARGUMENT),
        (dict(), FailureCategory.INVALID_ARGUMENT),
    ]
    for kwargs, cat in cases:
        before = b.snapshot()
        r = m.move_to(**kwargs)
        assert r.failure_category == cat, (kwargs, r.failure_category, r.message)
        assert not r.executed and r.message
        after = b.snapshot()
        assert np.array_equal(before.physics, after.physics), kwargs
        assert before.gripper_cmd_m == after.gripper_cmd_m
    assert m.recover(distance_m=-1).failure_category == FailureCategory.INVALID_ARGUMENT
    assert m.hold(duration_s="long").failure_category == FailureCategory.INVALID_ARGUMENT
    assert m.read_motion_trajectory(last_n=0).failure_category == FailureCategory.INVALID_ARGUMENT


def test_check_and_preview_are_read_only(above_cube: tuple) -> None:
    b, m = fresh(above_cube)
    before = b.snapshot()
    ok = m.check_motion([0.32, 0.05, 0.06], DOWN)
    assert ok.success and ok.value["feasible"] and ok.value["predicted_duration_s"] > 0
    bad = m.check_motion([0.30, 0.0, -0.01])
    assert bad.success and not bad.value["feasible"] and bad.value["category"] == "collision"
    pv = m.preview_motion([0.32, 0.05, 0.06], DOWN, speed_m_s=0.1)
    assert pv.value["feasible"] and len(pv.value["joint_path_rad"]) >= 2
    assert pv.value["min_clearance_m"] is None or pv.value["min_clearance_m"] >= 0
    assert np.array_equal(before.physics, b.snapshot().physics)


def test_estop_refuses_motion(above_cube: tuple) -> None:
    b, m = fresh(above_cube)
    b.estop("test")
    r = m.move_to([0.3, 0.0, 0.1])
    assert r.failure_category == FailureCategory.ESTOP and not r.executed
    assert m.move_to(jaw="close").failure_category == FailureCategory.ESTOP
    b.reset_estop()
    assert m.move_to(jaw="close").success


def test_recover_without_history_is_a_precondition_failure() -> None:
    b, m = cube_rig()
    assert m.recover().failure_category == FailureCategory.PRECONDITION


def test_dual_rig_routing_both_arms_and_arm_arm_collision() -> None:
    b, m = cube_rig("piper_dual")
    r = m.move_to([0.30, -0.15, 0.10], DOWN)
    assert r.success and r.value["arm"] == "right"
    r = m.move_to([0.30, 0.15, 0.10], DOWN)
    assert r.success and r.value["arm"] == "left"
    both = m.move_to({"left": [0.30, 0.07, 0.08], "right": [0.30, -0.07, 0.08]}, arm="both")
    assert both.success, both.message
    assert set(both.value["arms"]) == {"left", "right"}
    clash = m.move_to([0.30, -0.04, 0.08], arm="left")  # into the right arm's gripper
    assert clash.failure_category == FailureCategory.COLLISION, clash.message
    assert (
        m.move_to({"left": [0.3, 0.1, 0.1]}, arm="both").failure_category
        == FailureCategory.INVALID_ARGUMENT
    )


def test_two_arm_lift_moves_both_arms_together() -> None:
    from captain_ros.core.geometry import quat_multiply

    bar = (
        '<body name="bar" pos="0.32 0 0.025"><freejoint name="bar"/>'
        '<geom type="box" size="0.025 0.16 0.025" rgba="0.2 0.6 0.2 1" mass="0.2"/></body>'
    )
    b = MujocoBackend(
        SceneSpec(rig="piper_dual", worldbody_xml=bar, object_bodies=("bar",), seed=2)
    )
    m = MotionService(b)

    # top-down, fingers closing along world x (tool turned 90 deg about its z axis)
    def turned(sign: float) -> list[float]:
        return quat_multiply(
            np.array(DOWN), np.array([np.cos(np.pi / 4), 0.0, 0.0, sign * np.sin(np.pi / 4)])
        ).tolist()

    grasp = {"left": [0.32, 0.11, 0.025], "right": [0.32, -0.11, 0.025]}
    above = {a: [p[0], p[1], 0.085] for a, p in grasp.items()}
    r = m.move_to(above, {"left": turned(1.0), "right": turned(-1.0)}, arm="both")
    assert r.success, r.message
    assert m.move_to(grasp, arm="both").success
    for a in ("left", "right"):
        assert m.move_to(jaw="close", arm=a).value["holding"]
    lift = m.move_to(above, arm="both", mode="manipulation")
    assert lift.success, lift.message
    st = b.privileged_state()
    assert st.object("bar").position_m[2] > 0.07
    assert st.arm("left").holding and st.arm("right").holding
    z = [b.ee_pose(a).position_m[2] for a in ("left", "right")]
    assert abs(z[0] - z[1]) < 0.005  # moved together


def test_duration_too_short_is_stretched_to_the_velocity_limits(above_cube: tuple) -> None:
    b, m = fresh(above_cube)
    r = m.move_to([0.36, 0.15, 0.06], duration_s=0.04)
    assert r.success, r.message
    assert r.value["duration_s"] > 0.1


def test_history_is_forgotten_after_a_restore_to_an_earlier_state(above_cube: tuple) -> None:
    b, m = fresh(above_cube)
    snap = b.snapshot()
    assert m.move_to([CUBE_XY[0], CUBE_XY[1], 0.09]).success
    assert m.read_motion_trajectory().value["n_total"] > 0
    b.restore(snap)
    assert m.read_motion_trajectory().value["n_total"] == 0
    assert m.recover().failure_category == FailureCategory.PRECONDITION


def test_goal_configuration_does_not_depend_on_the_speed(above_cube):
    """check_motion plans at its default speed; the move may run at another. The goal joints (and
    so a collision verdict at the goal, e.g. fingers just above the table) must be the same."""
    b, m = fresh(above_cube)
    target = [CUBE_XY[0] - 0.06, CUBE_XY[1] + 0.05, 0.03]
    ends = []
    for speed in (0.01, 0.03, 0.05, 0.11):
        r = m.preview_motion(target, arm=None, speed_m_s=speed)
        assert r.success and r.value["feasible"], r.message
        ends.append(np.array(r.value["joint_path_rad"][-1]))
    for q in ends[1:]:
        assert np.max(np.abs(q - ends[0])) <= 3e-4
    # and the move ends where it was asked to, to a fraction of a millimetre
    r = m.move_to(target, speed_m_s=0.03)
    assert r.success, r.message
    assert np.linalg.norm(b.ee_pose("arm").position_m - target) < 1.5e-3
