"""MujocoBackend: scene composition, cameras, sensing, servo guard, e-stop, privileged state."""

from __future__ import annotations

import numpy as np
import pytest

from captain_ros.backends import make_backend
from captain_ros.backends.base import Backend
from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.core.errors import EStopError, UnknownNameError
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.core.types import ForceGuard

CUBE = (
    '<body name="cube" pos="0.42 0.12 0.02"><freejoint name="cube"/>'
    '<geom type="box" size="0.02 0.02 0.02" rgba="0.9 0.1 0.1 1" mass="0.05"/></body>'
)
DRAWER = (
    '<body name="cabinet" pos="0.45 -0.2 0.05"><geom type="box" size="0.06 0.06 0.05" rgba="0.5 0.5 0.6 1"/>'
    '<body name="drawer" pos="0 0 0"><joint name="drawer_slide" type="slide" axis="-1 0 0" range="0 0.1"/>'
    '<geom type="box" size="0.05 0.05 0.03" pos="-0.02 0 0" rgba="0.6 0.4 0.3 1" contype="0" conaffinity="0"/>'
    "</body></body>"
)


def scene(**kw: object) -> SceneSpec:
    base = dict(rig="piper", worldbody_xml=CUBE + DRAWER, object_bodies=("cube", "drawer"), seed=5)
    base.update(kw)
    return SceneSpec(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def backend() -> MujocoBackend:
    b = MujocoBackend(scene(), render_segmentation=True)
    yield b
    b.close()


def test_empty_scene_and_factory() -> None:
    for b in (MujocoBackend(None), make_backend("mujoco", rig="piper_dual")):
        assert isinstance(b, Backend)
        assert b.privileged_state().objects == {}
        for a in b.spec.arm_names:
            assert b.contact_force_n(a) == 0.0
            assert b.kinematics(a).collisions({}) == []
    assert MujocoBackend(None, rig="piper_dual").spec.cameras == (
        "head",
        "left_wrist",
        "right_wrist",
    )
    with pytest.raises(UnknownNameError):
        make_backend("nope")


def test_capture_rgbd_geometry_is_consistent(backend: MujocoBackend) -> None:
    frames = backend.capture()
    assert set(frames) == {"head", "wrist"}
    head = frames["head"]
    assert head.rgb.shape == (512, 512, 3) and head.depth_m.dtype == np.float32
    # project the cube's top centre into the head camera and compare with the depth image
    top = np.array([0.42, 0.12, 0.04, 1.0])
    p_cam = np.linalg.inv(head.world_from_camera) @ top
    uv = head.intrinsics @ (p_cam[:3] / p_cam[2])
    u, v = int(round(uv[0])), int(round(uv[1]))
    assert 0 <= u < 512 and 0 <= v < 512
    assert abs(float(head.depth_m[v, u]) - p_cam[2]) < 0.01
    assert head.segmentation is not None and head.segmentation[v, u] == 1  # cube = object 1
    assert head.rgb[v, u, 0] > 120 and head.rgb[v, u, 1] < 80  # it is red
    # back-projecting the depth at that pixel lands on the cube top
    ray = np.linalg.inv(head.intrinsics) @ np.array([u, v, 1.0])
    world = head.world_from_camera @ np.append(ray * head.depth_m[v, u], 1.0)
    assert np.linalg.norm(world[:3] - top[:3]) < 0.01


def test_jitter_changes_light_and_camera() -> None:
    a = MujocoBackend(scene())
    b = MujocoBackend(
        scene(
            light_diffuse=(0.3, 0.3, 0.3),
            camera_jitter_m=np.array([0.02, 0.0, 0.0]),
            camera_jitter_rad=np.array([0.0, 0.05, 0.0]),
        )
    )
    fa, fb = a.capture(["head"])["head"], b.capture(["head"])["head"]
    assert not np.allclose(fa.world_from_camera, fb.world_from_camera)
    assert fb.rgb.mean() < fa.rgb.mean()


def test_state_readings(backend: MujocoBackend) -> None:
    js = backend.joint_state("arm")
    assert js.position_rad.shape == (6,) and js.names[0] == "joint1"
    g = backend.gripper("arm")
    assert abs(g.opening_m - 0.07) < 1e-6 and not g.holding
    st = backend.privileged_state()
    assert set(st.objects) == {"cube", "drawer"}
    assert st.joints == {"drawer_slide": 0.0}
    assert st.object("cube").touching == ("table",)
    assert st.arm("arm").jaw_opening_m == pytest.approx(0.07)
    assert PrivilegedState.from_dict(st.to_dict()) == st  # the JSON form round-trips exactly
    with pytest.raises(UnknownNameError):
        backend.joint_state("left")


def test_servo_guard_stops_at_first_substep_over_threshold() -> None:
    b = MujocoBackend(None)
    q = b.joint_state("arm").position_rad.copy()
    # drive the shoulder down into the table; the guard must stop it within the tick it trips
    target = q.copy()
    stopped = None
    for _ in range(150):
        target[1] += 0.004  # 0.2 rad/s
        rep = b.servo({"arm": target}, 0.02, ForceGuard(stop_force_n=5.0, emergency_force_n=80.0))
        if rep.stopped:
            stopped = rep
            break
    assert stopped is not None and not stopped.emergency
    assert stopped.substeps <= 10 and stopped.peak_force_n > 5.0
    # holding: the target became the measured position at the stop
    assert np.allclose(stopped.q_applied["arm"], b.joint_state("arm").position_rad, atol=0.02)


def test_estop_refuses_servo_and_gripper() -> None:
    b = MujocoBackend(None)
    b.estop("test")
    assert b.estopped
    with pytest.raises(EStopError):
        b.servo({"arm": b.joint_state("arm").position_rad}, 0.02, ForceGuard())
    with pytest.raises(EStopError):
        b.command_gripper("arm", 0.0)
    b.reset_estop()
    assert not b.estopped
    b.servo({}, 0.02, ForceGuard())


def test_velocity_and_limit_clipping() -> None:
    b = MujocoBackend(None)
    q = b.joint_state("arm").position_rad
    rep = b.servo({"arm": q + 10.0}, 0.02, ForceGuard())
    applied = rep.q_applied["arm"]
    assert np.all(applied - q <= 3.9 * 0.02 + 1e-9)
    assert np.all(applied <= b.spec.arm("arm").upper_rad + 1e-9)


def test_force_sensor_matches_contact_forces_and_clearance() -> None:
    from captain_ros.motion import MotionService

    b = MujocoBackend(scene())
    m = MotionService(b)
    assert m.move_to([0.42, 0.12, 0.06], [0.0, 0.0, 1.0, 0.0]).success
    assert m.move_to([0.42, 0.12, 0.025]).success
    assert m.move_to(jaw="close").value["holding"]
    assert m.move_to([0.42, 0.12, 0.07], mode="manipulation").success
    by_sensor = b.contact_force_n("arm")
    by_contacts = float(b._contacts.arm_forces_by_contacts_n(b.data)[0])
    assert by_sensor == pytest.approx(by_contacts, rel=0.05, abs=0.02)
    assert 0.3 < by_sensor < 0.8  # the 50 g cube hangs in the jaw: ~0.49 N
    assert b.gripper("arm").force_n > 5.0  # the squeeze is internal, seen by the pads only
    kin = b.kinematics("arm")
    assert 0.0 < kin.clearance_m({}) < 0.3


def test_head_camera_sees_the_workspace_in_front_of_the_ready_arm() -> None:
    cubes, names = "", []
    for i, x in enumerate((0.22, 0.30, 0.38)):
        for j, y in enumerate((-0.12, 0.0, 0.12)):
            names.append(f"c{i}{j}")
            cubes += (
                f'<body name="c{i}{j}" pos="{x} {y} 0.02">'
                '<geom type="box" size="0.02 0.02 0.02" rgba="1 0 0 1"/></body>'
            )
    b = MujocoBackend(
        SceneSpec(rig="piper", worldbody_xml=cubes, object_bodies=tuple(names)),
        render_segmentation=True,
    )
    seg = b.capture(["head"])["head"].segmentation
    counts = np.bincount(seg.ravel(), minlength=len(names) + 1)[1:]
    assert counts.min() > 200, dict(zip(names, counts.tolist(), strict=True))
