"""The safety layer below the API, on the simulators (no hardware link)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from captain_ros.backends import make_backend
from captain_ros.backends.fake import FakeBackend
from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.backends.safety import SafeBackend, SafetyConfig
from captain_ros.backends.safety.guards import limit_step, outside_box
from captain_ros.core.errors import EStopError, InvalidArgumentError, SafetyLimitError
from captain_ros.core.types import ForceGuard
from captain_ros.motion import MotionService
from captain_ros.tasks import get_task


def test_limit_step_position_velocity_acceleration() -> None:
    lo, hi, v = -np.ones(2), np.ones(2), np.full(2, 1.0)
    s = limit_step(np.array([5.0, 0.001]), np.zeros(2), np.zeros(2), 0.02, lo, hi, v, math.inf)
    assert s.q_rad[0] == pytest.approx(0.02) and s.q_rad[1] == 0.001
    assert set(s.clipped) == {"position", "velocity"}
    s = limit_step(np.array([0.02, 0.0]), np.zeros(2), np.zeros(2), 0.02, lo, hi, v, 5.0)
    assert s.q_rad[0] == pytest.approx(5.0 * 0.02 * 0.02) and "acceleration" in s.clipped
    same = np.array([0.003, -0.002])
    assert limit_step(same, np.zeros(2), np.zeros(2), 0.02, lo, hi, v, math.inf).q_rad is not None
    assert np.array_equal(
        limit_step(same, np.zeros(2), np.zeros(2), 0.02, lo, hi, v, math.inf).q_rad, same
    )
    assert outside_box(np.array([0, 0, 2.0]), np.zeros(3), np.ones(3), 0.5)
    assert not outside_box(np.array([0, 0, 1.2]), np.zeros(3), np.ones(3), 0.5)


def test_unknown_safety_key_is_named() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown safety key.*max_speed.*valid"):
        SafetyConfig.from_dict({"max_speed": 1.0})
    with pytest.raises(InvalidArgumentError):
        SafetyConfig(velocity_scale=2.0)


def test_make_backend_wraps_and_mujoco_moves_identically() -> None:
    scene = get_task("pick_place").sample(5)
    raw, safe = MujocoBackend(scene), make_backend("mujoco", scene)
    assert isinstance(safe, SafeBackend)
    target = raw.ee_pose("arm").position_m + np.array([0.05, 0.03, -0.04])
    r1, r2 = MotionService(raw).move_to(target), MotionService(safe).move_to(target)
    assert r1.receipt == r2.receipt
    assert np.array_equal(raw.joint_state("arm").position_rad, safe.joint_state("arm").position_rad)
    raw.close()
    safe.close()


def test_workspace_guard_refuses_before_motion() -> None:
    b = SafeBackend(FakeBackend(), SafetyConfig(workspace_margin_m=0.0))
    spec = b.spec.arm("arm")
    q0 = b.joint_state("arm").position_rad.copy()
    far = q0.copy()
    far[1] = spec.lower_rad[1] + 0.05  # swing the shoulder back: tool leaves the box
    bad = next(
        (
            q
            for q in (far, q0 + np.array([0, -0.6, 0.8, 0, 0, 0]))
            if b.kinematics("arm").fk(q).position_m[2] < b.spec.workspace_min_m[2]
            or b.kinematics("arm").fk(q).position_m[0] < b.spec.workspace_min_m[0]
        ),
        None,
    )
    if bad is None:
        b.config = SafetyConfig(workspace_margin_m=0.0)
        b.inner.spec.workspace_max_m[:] = b.kinematics("arm").fk(q0).position_m - 0.01
        bad = q0
    with pytest.raises(SafetyLimitError, match="workspace"):
        b.servo({"arm": bad}, 0.02, ForceGuard())
    assert np.array_equal(b.joint_state("arm").position_rad, q0) and not b.estopped


def test_force_limit_latches_and_only_reset_clears(monkeypatch: pytest.MonkeyPatch) -> None:
    from captain_ros.backends.fake import contacts

    b = SafeBackend(FakeBackend(), SafetyConfig(max_contact_force_n=1e-9))
    monkeypatch.setattr(contacts, "arm_force", lambda st, table, arm: 5.0)  # a pushing contact
    q = b.joint_state("arm").position_rad + 0.01
    with pytest.raises(EStopError, match="guard:force"):
        b.servo({"arm": q}, 0.02, ForceGuard(stop_force_n=1e6, emergency_force_n=1e6))
    assert b.estopped
    with pytest.raises(EStopError):
        b.servo({"arm": q}, 0.02, ForceGuard())
    with pytest.raises(EStopError):
        b.command_gripper("arm", 0.02)
    b.reset_estop()
    assert not b.estopped


def test_estop_survives_restore_and_new_goals() -> None:
    b = make_backend("mujoco", get_task("pick_place").sample(5))
    m = MotionService(b)
    snap = b.snapshot()
    b.estop("operator test")
    b.restore(snap)  # a scene load must not clear the latch
    assert b.estopped
    r = m.move_to(b.ee_pose("arm").position_m + np.array([0.02, 0, 0]))
    assert not r.success and r.failure_category.value == "estop"
    b.reset_estop()
    assert m.move_to(b.ee_pose("arm").position_m + np.array([0.02, 0, 0])).success
    b.close()
