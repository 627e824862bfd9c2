"""The humanoid pair in MuJoCo behind the bridge: model, limits, watchdog, e-stop, snapshots."""

from __future__ import annotations

import math
import pickle

import mujoco
import numpy as np
import pytest

from captain_ros.backends.humanoid.layouts import LAYOUTS, get_layout
from captain_ros.backends.humanoid.sim import SPACING_M, MujocoHumanoidPair
from captain_ros.backends.humanoid.support import PALM_TILT_RAD, posture
from captain_ros.backends.humanoid.types import BaseVelocity
from captain_ros.core.errors import EStopError, InvalidArgumentError, UnknownNameError


@pytest.fixture(scope="module")
def pair():
    return MujocoHumanoidPair("base", seed=7)


def test_model_is_two_humanoids_with_14_pd_arm_joints_and_a_free_payload(pair):
    m = pair.model
    spec = pair.spec
    assert spec.robot_names == ("robot_a", "robot_b")
    assert spec.control_dt_s == pytest.approx(0.02) and spec.physics_dt_s == pytest.approx(0.002)
    for r in spec.robots:
        assert (
            len(r.arms.joint_names) == 14 and r.arms.kp_nm_rad == 24.0 and r.arms.kd_nm_s_rad == 1.5
        )
        for n in r.arms.joint_names:
            a = m.actuator(f"{n}_servo")
            assert a.gainprm[0] == 24.0 and tuple(a.biasprm[1:3]) == (-24.0, -1.5)
            assert a.forcelimited and a.forcerange[1] > 0
    assert m.joint("payload_free").type == mujoco.mjtJoint.mjJNT_FREE
    assert tuple(m.geom("payload_box").size) == pytest.approx((0.40, 0.22, 0.08))
    assert tuple(m.geom("a_left_palm").size) == pytest.approx((0.006, 0.035, 0.06))
    assert tuple(m.geom("a_left_forearm").size) == pytest.approx((0.006, 0.032, 0.11))
    q = posture("support")  # palms rotated 60 degrees from hanging
    assert q[0] + q[3] + q[5] == pytest.approx(-PALM_TILT_RAD)
    a, b = (pair.state(r).base for r in spec.robot_names)
    assert math.dist(a.xy, b.xy) == pytest.approx(SPACING_M, abs=5e-3)


def test_commands_are_clipped_and_the_watchdog_expires_them():
    p = MujocoHumanoidPair("base", seed=1, noise=0.0)
    applied = p.command_velocity("robot_a", BaseVelocity(2.0, -1.0, 3.0))
    assert applied == BaseVelocity(0.5, -0.3, 0.6)
    assert p.command_height("robot_a", -1.0) == pytest.approx(-0.20)
    goal = p.command_arms("robot_a", np.full(14, 9.0), 0.5)
    assert np.all(goal <= p.idx.robots["robot_a"].arm_upper + 1e-12)
    p.command_velocity("robot_b", BaseVelocity(0.0, 0.2, 0.0))
    rep = p.advance(1.0)  # not refreshed: expires after 0.5 s
    assert set(rep.watchdog_expired) == {"robot_a", "robot_b"}
    assert p._loco["robot_b"].cmd == BaseVelocity() and p._loco["robot_b"].expired
    p.advance(1.0)
    assert abs(p.state("robot_b").base_velocity.vy_m_s) < 0.01
    with pytest.raises(UnknownNameError, match="robot_a, robot_b"):
        p.command_velocity("robot_c", BaseVelocity())
    with pytest.raises(InvalidArgumentError):
        p.command_arms("robot_a", np.zeros(3), 1.0)
    with pytest.raises(InvalidArgumentError):
        p.advance(float("nan"))
    with pytest.raises(InvalidArgumentError):
        BaseVelocity(float("inf"), 0.0, 0.0)


def test_estop_halts_latches_and_needs_an_explicit_reset():
    p = MujocoHumanoidPair("base", seed=2)
    p.command_velocity("robot_a", BaseVelocity(0.0, -0.2, 0.0))
    p.advance(0.4)
    p.estop("test")
    with pytest.raises(EStopError):
        p.command_velocity("robot_a", BaseVelocity(0.0, -0.2, 0.0))
    rep = p.advance(0.5)
    assert rep.stopped and "e-stop" in rep.reason and p.estopped
    p.reset_estop()
    assert not p.estopped and p.command_velocity("robot_a", BaseVelocity()) == BaseVelocity()


def _drive(p, n=40):
    out = []
    for k in range(n):
        p.command_velocity("robot_a", BaseVelocity(0.0, -0.25, 0.0))
        p.command_velocity("robot_b", BaseVelocity(0.0, 0.25, 0.05 * math.sin(k)))
        p.advance(0.1)
        out.append(p.data.qpos.copy())
    return np.array(out)


def test_snapshot_restore_is_bit_exact_in_process_and_across_pickling():
    p = MujocoHumanoidPair("base", seed=3)
    p.command_arms("robot_a", posture("support"), 1.0)
    p.advance(1.0)
    snap = p.snapshot()
    first = _drive(p)
    digest = p.restore(snap)
    assert digest == snap.digest
    assert np.array_equal(_drive(p), first)  # same noise, same physics
    other = MujocoHumanoidPair("base", seed=99)  # a different seed: its own generator state
    assert other.restore(pickle.loads(pickle.dumps(snap))) == snap.digest
    assert np.array_equal(_drive(other), first)
    with pytest.raises(InvalidArgumentError):
        MujocoHumanoidPair("l3").restore(snap)


def test_privileged_state_and_monitor(pair):
    s = pair.privileged_state()
    assert s["layout"] == "base" and len(s["digest"]) == 20
    assert "start_support" in s["payload"]["touches"] and s["payload"]["tilt_rad"] < 1e-3
    # palms just under its ends: the pedestal carries most of the 2 kg payload until initialization
    assert sum(sum(f) for f in s["palm_force_n"].values()) < 0.3 * 2.0 * 9.81
    assert s["payload"]["lowest_z_m"] == pytest.approx(0.80, abs=0.005)  # resting on the pedestal
    assert set(s["monitor"]) >= {
        "max_payload_tilt_rad",
        "min_payload_lowest_z_m",
        "environment_contacts",
    }


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layouts_have_ordered_gates_walls_and_a_target(name):
    lay = get_layout(name)
    assert len(lay.gates) >= 3 and lay.milestone_names[-2:] == ("target_region", "terminal")
    assert [g.s_m for g in lay.gates] == sorted(g.s_m for g in lay.gates)
    assert len(lay.wall_segments()) >= 2 * lay.n_segments + 2
    s, lat, seg = lay.project(lay.point_at(lay.gates[1].s_m) + np.array([0.0, 0.0]))
    assert s == pytest.approx(lay.gates[1].s_m, abs=1e-6) and abs(lat) < 1e-9
    assert lay.corner_s() and all(
        abs(lay.turn_at_corner(i)) == pytest.approx(math.pi / 2) for i in range(len(lay.corner_s()))
    )
    with pytest.raises(UnknownNameError):
        get_layout("l9")
