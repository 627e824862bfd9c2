"""The robosuite backend on robosuite 1.5.2 for real (Lift, Panda) on the lock's MuJoCo 4.0.0.

Skipped only when the optional extra is not installed (scripts/setup.sh installs it, so CI runs
these); the names and the one-line error of the missing extra are checked without it.
"""

from __future__ import annotations

import importlib.util
import pickle
import sys
from typing import Any

import mujoco
import numpy as np
import pytest

from captain_ros.core.errors import NotSupportedError, UnknownNameError
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.types import ForceGuard
from captain_ros.tasks import TASKS, get_task, task_names

HAVE_ROBOSUITE = importlib.util.find_spec("robosuite") is not None
needs_robosuite = pytest.mark.skipif(
    not HAVE_ROBOSUITE, reason="robosuite extra not installed (scripts/setup_robosuite.sh)"
)


def test_task_names_are_per_backend() -> None:
    assert get_task("lift", "robosuite").name == "robosuite_lift"
    assert get_task("robosuite_stack").name == "robosuite_stack"
    assert get_task("stack").name == "stack"  # ours, not robosuite's
    assert "robosuite_lift" not in TASKS and task_names("robosuite")[0] == "robosuite_lift"
    with pytest.raises(UnknownNameError):
        get_task("lift", "mujoco")
    with pytest.raises(UnknownNameError):
        get_task("robosuite_lift", "mujoco")
    from captain_ros.backends.robosuite.scene import RobosuiteScene

    scene = get_task("lift", "robosuite").sample(1003)
    assert isinstance(scene, RobosuiteScene)
    assert (scene.rig, scene.env_name, scene.seed) == ("robosuite", "Lift", 1003)
    assert scene.object_bodies == ("red_cube",)


def test_host_checks_travel_with_the_state() -> None:
    state = PrivilegedState(time_s=1.0, checks={"robosuite_success": True})
    back = PrivilegedState.from_dict(state.to_dict())
    assert back.checks == {"robosuite_success": True}
    assert get_task("lift", "robosuite").success(back)
    assert "checks" not in PrivilegedState().to_dict()  # other backends' records are unchanged


def test_missing_extra_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from captain_ros.backends.robosuite import env

    monkeypatch.setitem(sys.modules, "robosuite", None)  # import robosuite -> ImportError
    with pytest.raises(NotSupportedError) as err:
        env.import_robosuite()
    msg = str(err.value)
    assert "\n" not in msg and "[robosuite]" in msg and "setup_robosuite.sh" in msg


@pytest.fixture(scope="module")
def lift():
    if not HAVE_ROBOSUITE:
        pytest.skip("robosuite extra not installed (scripts/setup_robosuite.sh)")
    from captain_ros.backends.robosuite.backend import RobosuiteBackend

    b = RobosuiteBackend(get_task("lift", "robosuite").sample(7))
    yield b
    b.close()


@needs_robosuite
def test_compat_layer_mends_joint_addresses(lift) -> None:
    model = lift.env.sim.model
    assert model.get_joint_qpos_addr("robot0_joint1") == 0
    free = model.get_joint_qpos_addr("cube_joint0")
    assert isinstance(free, tuple) and free[1] - free[0] == 7
    dof = model.get_joint_qvel_addr("cube_joint0")
    assert dof[1] - dof[0] == 6


@needs_robosuite
def test_rig_frames_and_kinematics(lift) -> None:
    spec = lift.spec
    assert spec.cameras == ("head", "wrist") and spec.arms[0].joint_names[0] == "robot0_joint1"
    np.testing.assert_allclose(spec.arms[0].base_pose.position_m, [-0.56, 0.0, 0.112], atol=1e-6)
    q = lift.joint_state("arm").position_rad
    kin = lift.kinematics("arm")
    pose = lift.ee_pose("arm")
    np.testing.assert_allclose(kin.fk(q).position_m, pose.position_m, atol=1e-9)
    tool = kin.fk_matrix(q)[:3, :3]
    assert tool[2, 2] < -0.95  # the tool points down at robosuite's start pose
    fingers = [
        lift.data.xpos[lift.model.body(b).id]
        for b in ("gripper0_right_leftfinger", "gripper0_right_rightfinger")
    ]
    axis = (fingers[0] - fingers[1]) / np.linalg.norm(fingers[0] - fingers[1])
    assert abs(axis @ tool[:, 1]) > 0.99  # tool y is the jaw closing axis
    assert kin.collisions({"arm": q}) == []
    assert kin.jacobian(q).shape == (6, 7)


@needs_robosuite
def test_rgbd_depth_is_metric(lift) -> None:
    frame = lift.capture(["head"])["head"]
    cube = lift.privileged_state().object("red_cube").position_m
    k, t = frame.intrinsics, frame.world_from_camera
    p_cam = np.linalg.inv(t) @ np.append(cube, 1.0)
    u, v = (k @ (p_cam[:3] / p_cam[2]))[:2]
    depth = float(frame.depth_m[int(round(v)), int(round(u))])
    # the pixel over the cube's centre sees its near face: ~2 cm closer than the centre
    assert 0.0 < p_cam[2] - depth < 0.04
    assert frame.rgb[int(round(v)), int(round(u))][0] > 120  # red


@needs_robosuite
def test_snapshot_restore_replays_bit_exactly(lift) -> None:
    q0 = lift.joint_state("arm").position_rad
    snap = pickle.loads(pickle.dumps(lift.snapshot()))
    lift.command_gripper("arm", 0.02)
    for i in range(15):
        lift.servo({"arm": q0 + 0.01 * i}, 0.02, ForceGuard())
    first = lift.data.qpos.copy()
    lift.restore(snap)
    lift.command_gripper("arm", 0.02)
    for i in range(15):
        lift.servo({"arm": q0 + 0.01 * i}, 0.02, ForceGuard())
    assert np.array_equal(first, lift.data.qpos)
    lift.restore(snap)


@needs_robosuite
def test_guarded_descent_stops_on_the_cube(lift) -> None:
    """Our guarded Cartesian motion on robosuite's physics: descending onto the cube at 3 cm/s
    stops at the first substep over 5 N, on top of the cube, without knocking it away."""
    from captain_ros.motion.service import MotionService

    snap = lift.snapshot()
    state = lift.privileged_state()
    assert state.checks == {"robosuite_success": False}
    cube = state.object("red_cube").position_m
    motion = MotionService(lift)
    lift.command_gripper("arm", 0.0)  # closed jaw: the fingertips land on the cube's top face
    tool_down = [0.0, 1.0, 0.0, 0.0]
    ok = motion.move_to(position=[cube[0], cube[1], cube[2] + 0.10], orientation=tool_down)
    assert ok.success, ok.message
    res = motion.move_to(position=[cube[0], cube[1], cube[2]], speed_m_s=0.03)
    assert (
        not res.success
        and res.failure_category is not None
        and res.failure_category.value == "contact"
    ), res.receipt
    assert lift.ee_pose("arm").position_m[2] > cube[2] + 0.01  # on top, not through it
    after = lift.privileged_state().object("red_cube").position_m
    assert np.linalg.norm(after[:2] - cube[:2]) < 0.01
    lift.restore(snap)
    assert mujoco.mj_stateSize(lift.model, mujoco.mjtState.mjSTATE_INTEGRATION) == snap.physics.size


def test_clear_axis_keeps_the_open_jaw_off_the_neighbour() -> None:
    """The Stack plan's face choice: the closing axis points across the direction to the other
    cube (robosuite places the cubes closer than the Panda's open jaw)."""
    from types import SimpleNamespace

    from captain_ros.policy.expert.plans.robosuite import clear_axis

    def state(yaw: float, other_xy: tuple[float, float]) -> Any:
        return SimpleNamespace(
            G={
                "red_cube": {"center_m": [0.0, 0.0, 0.02], "yaw_rad": yaw},
                "green_cube": {"center_m": [*other_xy, 0.025], "yaw_rad": 0.0},
            }
        )

    s = state(0.0, (-0.065, -0.01))  # neighbour behind along x: close along y
    note = clear_axis(s, "red_cube", ["green_cube"])
    assert abs(abs(np.sin(s.G["red_cube"]["yaw_rad"])) - 1.0) < 1e-9 and note["along"] < 0.2
    s = state(0.0, (0.0, 0.06))  # neighbour to the side: keep closing along x
    clear_axis(s, "red_cube", ["green_cube"])
    assert s.G["red_cube"]["yaw_rad"] == 0.0
    assert clear_axis(state(0.3, (0.0, 0.0)), "red_cube", [])["axis"] is None
