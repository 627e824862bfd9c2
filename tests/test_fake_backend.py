"""The kinematic FakeBackend behaves like a device: limits, guards, grasping, rendering, snapshots."""

from __future__ import annotations

import math

import numpy as np
import pytest

from captain_ros.backends.base import Backend
from captain_ros.backends.fake import FakeBackend, FakeBox, boxes_from_scene, rpy_matrix
from captain_ros.core.errors import EStopError, InvalidArgumentError, UnknownNameError
from captain_ros.core.geometry import quat_to_matrix
from captain_ros.core.scene import SceneSpec
from captain_ros.core.types import ForceGuard

GUARD = ForceGuard(5.0, 80.0)


def drive(b: FakeBackend, xyz, arm: str = "arm", ticks: int = 150, guard: ForceGuard = GUARD):
    q = b.joint_state(arm).position_rad.copy()
    q[:3] = xyz
    rep = None
    for _ in range(ticks):
        rep = b.servo({arm: q}, 0.02, guard)
        if rep.stopped or np.allclose(b.joint_state(arm).position_rad, q, atol=1e-9):
            break
    return rep


def test_is_a_backend_with_spec():
    b = FakeBackend()
    assert isinstance(b, Backend)
    assert b.spec.arm_names == ("arm",)
    assert set(b.spec.cameras) == {"head", "wrist"}
    dual = FakeBackend(rig="piper_dual")
    assert dual.spec.arm_names == ("left", "right")
    with pytest.raises(UnknownNameError, match="valid: arm"):
        b.ee_pose("left")


def test_fk_and_jacobian_match_finite_differences():
    b = FakeBackend()
    kin = b.kinematics("arm")
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = np.concatenate([rng.uniform(-0.5, 0.5, 3), rng.uniform(-1.2, 1.2, 3)])
        jac = kin.jacobian(q)
        r0 = quat_to_matrix(kin.fk(q).quat_wxyz)
        eps = 1e-6
        for j in range(6):
            dq = np.zeros(6)
            dq[j] = eps
            p1 = kin.fk(q + dq)
            np.testing.assert_allclose(
                (p1.position_m - kin.fk(q).position_m) / eps, jac[:3, j], atol=1e-5
            )
            dr = (quat_to_matrix(p1.quat_wxyz) - r0) / eps @ r0.T  # skew(omega)
            omega = np.array([dr[2, 1], dr[0, 2], dr[1, 0]])
            np.testing.assert_allclose(omega, jac[3:, j], atol=1e-4)
        np.testing.assert_allclose(
            quat_to_matrix(kin.fk(q).quat_wxyz), rpy_matrix(*q[3:]), atol=1e-9
        )


def test_servo_clips_to_velocity_and_joint_limits():
    b = FakeBackend()
    q = b.joint_state("arm").position_rad.copy()
    target = q.copy()
    target[0] = 5.0  # beyond the x limit
    rep = b.servo({"arm": target}, 0.02, GUARD)
    assert rep.q_applied["arm"][0] == pytest.approx(b.spec.arm("arm").upper_rad[0])
    moved = b.joint_state("arm").position_rad[0] - q[0]
    assert moved == pytest.approx(0.5 * 0.02)  # 0.5 m/s for 20 ms
    with pytest.raises(InvalidArgumentError):
        b.servo({"arm": [np.nan] * 6}, 0.02, GUARD)


def test_guarded_stop_on_table_and_baseline():
    b = FakeBackend(boxes=[])
    drive(b, [0.3, 0.2, 0.05])
    rep = drive(b, [0.3, 0.2, -0.05])
    assert rep.stopped and not rep.emergency
    force = b.contact_force_n("arm")
    assert 5.0 < force < 8.0
    # the arm holds where it stopped
    z = b.ee_pose("arm").position_m[2]
    b.servo({"arm": b.joint_state("arm").position_rad}, 0.1, GUARD)
    assert b.ee_pose("arm").position_m[2] == pytest.approx(z)
    # a move that starts in contact with a baseline is not stopped at once
    rep = drive(b, [0.3, 0.2, 0.05], guard=ForceGuard(5.0, 80.0, baseline_n=force))
    assert not rep.stopped and b.contact_force_n("arm") == 0.0


def test_emergency_limit_in_manipulation_mode():
    b = FakeBackend(boxes=[])
    drive(b, [0.3, 0.2, 0.01])
    rep = drive(b, [0.3, 0.2, -0.09], guard=ForceGuard(1e9, 60.0))
    assert rep.stopped and rep.emergency and rep.peak_force_n > 60.0


def test_grasp_lift_place_and_release_on_stack():
    b = FakeBackend()
    drive(b, [0.45, 0.05, 0.10])
    rep = drive(b, [0.45, 0.05, 0.02])
    assert not rep.stopped  # open pads pass beside the 4 cm box
    b.command_gripper("arm", 0.0)
    b.servo({"arm": b.joint_state("arm").position_rad}, 1.0, GUARD)
    g = b.gripper("arm")
    assert g.holding and g.opening_m == pytest.approx(0.04)
    drive(b, [0.45, 0.05, 0.20])
    red = b.privileged_state().object("red_box")
    assert red.held_by == "arm" and red.position_m[2] == pytest.approx(0.20)
    drive(b, [0.40, -0.15, 0.06])
    b.command_gripper("arm", 0.07)
    b.servo({"arm": b.joint_state("arm").position_rad}, 1.0, GUARD)
    red = b.privileged_state().object("red_box")
    assert red.held_by is None and not b.gripper("arm").holding
    assert red.position_m[2] == pytest.approx(0.03 + 0.02)  # on top of the blue box
    # pressing a held box onto the table produces contact force
    b2 = FakeBackend()
    drive(b2, [0.45, 0.05, 0.02])
    b2.command_gripper("arm", 0.0)
    b2.servo({"arm": b2.joint_state("arm").position_rad}, 1.0, GUARD)
    rep = drive(b2, [0.45, 0.05, -0.02])
    assert rep.stopped and b2.gripper("arm").holding


def test_closing_on_nothing_closes_fully():
    b = FakeBackend()
    b.command_gripper("arm", 0.0)
    b.servo({"arm": b.joint_state("arm").position_rad}, 1.0, GUARD)
    g = b.gripper("arm")
    assert g.opening_m == pytest.approx(0.0) and not g.holding
    assert b.command_gripper("arm", 1.0) == pytest.approx(0.07)


def test_estop_latches_and_resets():
    b = FakeBackend()
    b.estop("test")
    assert b.estopped
    with pytest.raises(EStopError):
        b.servo({"arm": b.joint_state("arm").position_rad}, 0.02, GUARD)
    with pytest.raises(EStopError):
        b.command_gripper("arm", 0.0)
    b.reset_estop()
    assert not b.estopped
    b.servo({"arm": b.joint_state("arm").position_rad}, 0.02, GUARD)


def test_snapshot_restore_is_exact():
    b = FakeBackend()
    snap = b.snapshot()
    drive(b, [0.45, 0.05, 0.02])
    b.command_gripper("arm", 0.0)
    b.servo({"arm": b.joint_state("arm").position_rad}, 1.0, GUARD)
    after = b.privileged_state()
    b.restore(snap)
    assert b.time_s() == 0.0 and not b.gripper("arm").holding
    drive(b, [0.45, 0.05, 0.02])
    b.command_gripper("arm", 0.0)
    b.servo({"arm": b.joint_state("arm").position_rad}, 1.0, GUARD)
    assert b.privileged_state() == after


def test_rendering_depth_and_segmentation_are_metric():
    b = FakeBackend(image_size=(96, 128))
    frames = b.capture()
    head = frames["head"]
    assert head.rgb.shape == (96, 128, 3) and head.depth_m.shape == (96, 128)
    ids = set(np.unique(head.segmentation).tolist())
    assert {1, 2} <= ids
    # back-project the pixels of box 1 and check they lie on the red box's surface
    k, t = head.intrinsics, head.world_from_camera
    v, u = np.nonzero(head.segmentation == 1)
    z = head.depth_m[v, u]
    pts_cam = np.stack([(u - k[0, 2]) / k[0, 0] * z, (v - k[1, 2]) / k[1, 1] * z, z], -1)
    pts = pts_cam @ t[:3, :3].T + t[:3, 3]
    box = b.privileged_state().object("red_box")
    c, half = np.array(box.position_m), np.array(box.size_m) / 2
    assert np.all(np.abs(pts - c) <= half + 1e-6)
    assert np.all(head.rgb[v, u, 0] > head.rgb[v, u, 2])  # red
    with pytest.raises(UnknownNameError):
        b.capture(["nope"])
    # the wrist camera follows the tool
    w0 = frames["wrist"].world_from_camera.copy()
    drive(b, [0.35, 0.1, 0.3])
    assert not np.allclose(b.capture(["wrist"])["wrist"].world_from_camera, w0)


def test_collisions_report_table_and_arm_arm():
    b = FakeBackend(rig="piper_dual")
    kin = b.kinematics("left")
    q = b.joint_state("left").position_rad.copy()
    assert kin.collisions({"left": q}) == []
    low = q.copy()
    low[2] = -0.08
    assert "left/table" in kin.collisions({"left": low})
    near = b.joint_state("right").position_rad.copy()
    near[:3] = q[:3] + [0.0, 0.0, 0.02]
    assert "left/right" in kin.collisions({"left": q, "right": near})


def test_boxes_from_scene_spec():
    scene = SceneSpec(
        "piper",
        '<body name="cube" pos="0.4 0.1 0.02"><freejoint name="cube_j"/>'
        '<geom type="box" size="0.02 0.02 0.02" rgba="0 1 0 1"/></body>'
        '<body name="can" pos="0.5 -0.1 0.05" quat="0.9238795 0 0 0.3826834">'
        '<geom type="cylinder" size="0.03 0.05" material="m_can"/></body>',
        asset_xml='<material name="m_can" rgba="0 0 1 1"/>',
        object_bodies=("cube", "can"),
    )
    boxes = boxes_from_scene(scene)
    assert [bx.name for bx in boxes] == ["cube", "can"]
    np.testing.assert_allclose(boxes[1].size_m, [0.06, 0.06, 0.10])
    assert boxes[0].rgb == (0, 255, 0) and boxes[1].rgb == (0, 0, 255)
    assert boxes[1].yaw_rad == pytest.approx(math.pi / 4, abs=1e-6)
    b = FakeBackend(scene=scene)
    assert set(b.privileged_state().objects) == {"cube", "can"}


def test_box_validation():
    with pytest.raises(InvalidArgumentError):
        FakeBox("bad", [0, 0], [0.1, 0.1, 0.1])
    assert math.isclose(
        FakeBox("ok", [0, 0, 0], [0.1, 0.1, 0.1], yaw_rad=0.3).rotation[1, 0], math.sin(0.3)
    )
