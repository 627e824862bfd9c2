"""PiPER kinematics: URDF vs MuJoCo FK, Jacobian vs finite differences, DLS IK convergence."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest

from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.core.geometry import Pose
from captain_ros.core.share import share_path
from captain_ros.motion import ik

URDF = share_path("urdf")


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _axis_angle(axis: np.ndarray, a: float) -> np.ndarray:
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(a) * kx + (1 - math.cos(a)) * kx @ kx


def urdf_link_pose(path: Path, link: str, q: dict[str, float]) -> np.ndarray:
    """World pose of ``link`` by chaining the URDF joint transforms in numpy."""
    root = ET.parse(path).getroot()
    by_child = {j.find("child").get("link"): j for j in root.findall("joint")}
    chain = []
    name = link
    while name in by_child:
        j = by_child[name]
        chain.append(j)
        name = j.find("parent").get("link")
    t = np.eye(4)
    for j in reversed(chain):
        o = j.find("origin")
        xyz = np.array([float(v) for v in (o.get("xyz") or "0 0 0").split()])
        rpy = [float(v) for v in (o.get("rpy") or "0 0 0").split()]
        step = np.eye(4)
        step[:3, :3] = _rpy(*rpy)
        step[:3, 3] = xyz
        move = np.eye(4)
        ax = j.find("axis")
        axis = (
            np.array([float(v) for v in ax.get("xyz").split()])
            if ax is not None
            else np.array([1.0, 0, 0])
        )
        val = q.get(j.get("name"), 0.0)
        if j.get("type") == "revolute":
            move[:3, :3] = _axis_angle(axis, val)
        elif j.get("type") == "prismatic":
            move[:3, 3] = axis * val
        t = t @ step @ move
    return t


@pytest.fixture(scope="module")
def dual() -> MujocoBackend:
    return MujocoBackend(None, rig="piper_dual")


@pytest.mark.parametrize("rig", ["piper", "piper_dual"])
def test_urdf_fk_matches_mujoco(rig: str) -> None:
    m = mujoco.MjModel.from_xml_path(str(URDF / f"{rig}.xml"))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(1)
    prefixes = [""] if rig == "piper" else ["left_", "right_"]
    for _ in range(20):
        q = {}
        for p in prefixes:
            for i in range(1, 7):
                j = m.joint(f"{p}joint{i}")
                q[j.name] = float(rng.uniform(*m.jnt_range[j.id]))
                d.qpos[m.jnt_qposadr[j.id]] = q[j.name]
            for f in ("finger_left", "finger_right"):
                j = m.joint(f"{p}{f}")
                q[j.name] = float(rng.uniform(0, 0.035))
                d.qpos[m.jnt_qposadr[j.id]] = q[j.name]
        mujoco.mj_kinematics(m, d)
        for p in prefixes:
            t = urdf_link_pose(URDF / f"{rig}.urdf", f"{p}tcp", q)
            s = m.site(f"{p}tcp").id
            np.testing.assert_allclose(t[:3, 3], d.site_xpos[s], atol=1e-6)
            np.testing.assert_allclose(t[:3, :3], d.site_xmat[s].reshape(3, 3), atol=1e-6)
            for side in ("left", "right"):  # finger pads follow the prismatic joints
                b = m.body(f"{p}finger_{side}").id
                tf = urdf_link_pose(URDF / f"{rig}.urdf", f"{p}finger_{side}", q)
                np.testing.assert_allclose(tf[:3, 3], d.xpos[b], atol=1e-6)


def test_urdf_joint_limits_match_mujoco() -> None:
    m = mujoco.MjModel.from_xml_path(str(URDF / "piper.xml"))
    root = ET.parse(URDF / "piper.urdf").getroot()
    for j in root.findall("joint"):
        if j.get("type") in ("revolute", "prismatic"):
            lim = j.find("limit")
            np.testing.assert_allclose(
                [float(lim.get("lower")), float(lim.get("upper"))],
                m.jnt_range[m.joint(j.get("name")).id],
                atol=1e-5,
            )
    # published datasheet limits [deg]
    np.testing.assert_allclose(
        np.degrees(m.jnt_range[:6]),
        [[-154, 154], [0, 195], [-175, 0], [-106, 106], [-75, 75], [-100, 100]],
        atol=1e-3,
    )


def test_jacobian_matches_finite_differences(dual: MujocoBackend) -> None:
    rng = np.random.default_rng(2)
    for arm in ("left", "right"):
        kin = dual.kinematics(arm)
        spec = dual.spec.arm(arm)
        for _ in range(10):
            q = rng.uniform(spec.lower_rad, spec.upper_rad)
            jac = kin.jacobian(q)
            t0 = kin.fk_matrix(q.copy())
            h = 1e-6
            for i in range(6):
                dq = q.copy()
                dq[i] += h
                t1 = kin.fk_matrix(dq)
                np.testing.assert_allclose((t1[:3, 3] - t0[:3, 3]) / h, jac[:3, i], atol=2e-5)
                w = ik.rotation_vector(t1[:3, :3] @ t0[:3, :3].T) / h
                np.testing.assert_allclose(w, jac[3:, i], atol=2e-5)


def test_dls_ik_converges_on_reachable_targets(dual: MujocoBackend) -> None:
    kin = dual.kinematics("left")
    spec = dual.spec.arm("left")
    rng = np.random.default_rng(3)
    ok = 0
    for _ in range(30):
        q_true = rng.uniform(spec.lower_rad * 0.8, spec.upper_rad * 0.8)
        target = kin.fk(q_true)
        seed = np.clip(q_true + rng.normal(0, 0.3, 6), spec.lower_rad, spec.upper_rad)
        r = ik.solve(kin, target, seed, spec.lower_rad, spec.upper_rad, max_iters=100)
        if r.converged:
            ok += 1
            got = kin.fk(r.q)
            assert np.linalg.norm(got.position_m - target.position_m) < 1e-3
    assert ok >= 27


def test_fk_does_not_touch_live_state(dual: MujocoBackend) -> None:
    before = dual.data.qpos.copy()
    dual.kinematics("left").fk(np.zeros(6))
    dual.kinematics("left").collisions({"left": np.zeros(6)})
    assert np.array_equal(before, dual.data.qpos)


def test_unreachable_pose_fails_ik(dual: MujocoBackend) -> None:
    kin = dual.kinematics("left")
    spec = dual.spec.arm("left")
    r = ik.solve(kin, Pose([1.2, 0.25, 0.3]), np.zeros(6), spec.lower_rad, spec.upper_rad)
    assert not r.converged and r.position_error_m > 0.3


def test_collisions_lists_table_and_arm_arm(dual: MujocoBackend) -> None:
    kin = dual.kinematics("left")
    home = {a: dual.joint_state(a).position_rad for a in ("left", "right")}
    assert kin.collisions(home) == []
    # shoulder pitched fully forward drives the arm into the table
    q = home["left"].copy()
    q[1] = math.radians(190)
    q[2] = 0.0
    assert any("table" in c for c in kin.collisions({"left": q}))


@pytest.mark.parametrize("rig", ["piper", "piper_dual"])
def test_urdf_camera_optical_frames_match_mujoco(rig: str) -> None:
    from captain_ros.backends.mujoco.render import world_from_camera

    b = MujocoBackend(None, rig=rig)
    q = {}
    for a in b.spec.arm_names:
        spec = b.spec.arm(a)
        for name, v in zip(spec.joint_names, b.joint_state(a).position_rad, strict=True):
            q[name] = float(v)
    for cam in b.spec.cameras:
        t_urdf = urdf_link_pose(URDF / f"{rig}.urdf", f"{cam}_optical_frame", q)
        t_mj = world_from_camera(b.data, b.model.camera(cam).id)
        np.testing.assert_allclose(t_urdf, t_mj, atol=1e-6)


def test_rotation_vector_matches_scipy_including_near_pi() -> None:
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(4)
    vecs = [rng.normal(size=3) for _ in range(200)]
    vecs = [v / np.linalg.norm(v) * rng.uniform(0, np.pi) for v in vecs]
    vecs += [np.array([np.pi - 1e-6, 0, 0]), np.array([0, 0, 1e-10]), np.array([0.0, np.pi, 0.0])]
    for v in vecs:
        r = Rotation.from_rotvec(v).as_matrix()
        w = ik.rotation_vector(r)
        np.testing.assert_allclose(Rotation.from_rotvec(w).as_matrix(), r, atol=1e-6)


def test_collisions_report_robot_self_contacts() -> None:
    b = MujocoBackend(None)
    kin, spec = b.kinematics("arm"), b.spec.arm("arm")
    rng = np.random.default_rng(0)
    robot = {"base_link", "finger_left", "finger_right"} | {f"link{i}" for i in range(1, 7)}
    for _ in range(2000):
        pairs = kin.collisions({"arm": rng.uniform(spec.lower_rad, spec.upper_rad)})
        selfs = [p for p in pairs if set(p.split("<->")) <= robot]
        if selfs:
            break
    assert selfs, "no self-collision found among random configurations"
