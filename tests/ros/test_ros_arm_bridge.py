"""The ROS arm bridge against its MuJoCo-backed driver: across processes (the issue's done-when:
an episode of the scripted expert through ``--backend ros_arm``), the interfaces, and one test per
bad-input guard (driver down, action server missing, stale joint_states, limit exceeded, unknown
config key): a clear message, no motion, the e-stop latched where motion was under way."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from arm_bridge_helpers import (
    EPISODE_FEEDBACK_AGE_S,
    EPISODE_GOAL_TIMEOUT_S,
    FEEDBACK_AGE_S,
    InProcessDriver,
    arm_config,
    write_config,
)
from ros_fixtures import wait_until

import captain_ros.ros.arm_bridge  # noqa: F401 - registers the ROS 2 transport of ros_arm
from captain_ros.core.errors import (
    EStopError,
    HardwareError,
    InvalidArgumentError,
    SafetyLimitError,
)
from captain_ros.core.share import share_path
from captain_ros.core.types import ForceGuard


def identity_calibration(folder: Path) -> None:
    folder.mkdir()
    for cam in ("head", "wrist"):
        key = "world_from_optical" if cam == "head" else "flange_from_optical"
        (folder / f"{cam}.yaml").write_text(json.dumps({key: np.eye(4).tolist()}))


@pytest.fixture
def arm(driver: InProcessDriver, domain_id: int, tmp_path: Path):
    from captain_ros.backends import make_backend

    b = make_backend("ros_arm", config=arm_config(tmp_path / "calib", domain_id))
    yield b
    b.close()


def test_bridge_moves_senses_grips_and_sees(driver: InProcessDriver, arm) -> None:
    from captain_ros.motion import MotionService

    ms = MotionService(arm)
    p0 = arm.ee_pose("arm").position_m
    r = ms.move_to(p0 + np.array([0.03, 0.02, -0.05]))
    assert r.success and r.executed, r.message
    truth = driver.driver.tcp_pose("arm").position_m
    assert np.linalg.norm(truth - (p0 + [0.03, 0.02, -0.05])) < 0.005  # the simulated arm moved
    assert np.linalg.norm(arm.ee_pose("arm").position_m - truth) < 1e-3  # twin = measured
    r = ms.move_to(jaw=0.02)
    assert r.success, r.message
    assert abs(driver.driver.opening_m("arm") - 0.02) < 0.002
    assert abs(arm.gripper("arm").opening_m - 0.02) < 0.002
    frames = arm.capture()
    assert set(frames) == {"head", "wrist"}
    for name, f in frames.items():
        sim = driver.driver.render(name)
        assert f.rgb.shape == sim.rgb.shape and np.mean(f.depth_m > 0) > 0.5
        assert np.allclose(f.intrinsics, sim.intrinsics)
        assert np.abs(f.world_from_camera - sim.world_from_camera).max() < 0.01  # calibration
        assert np.nanmean(np.abs(f.depth_m - sim.depth_m)) < 0.01  # 16UC1 mm depth


def test_contact_from_efforts_stops_a_guarded_descent(driver: InProcessDriver, arm) -> None:
    from captain_ros.motion import MotionService

    ms = MotionService(arm)
    assert "collision" in ms.move_to([0.3, 0.0, -0.01]).receipt  # the twin knows the table
    c = arm.privileged_state().object("red_cube").position_m.copy()  # the driver's ground truth
    assert ms.move_to([c[0], c[1], c[2] + 0.10], [0, 0, 1, 0]).success
    assert ms.move_to(jaw="close").success
    r = ms.move_to([c[0], c[1], 0.022], speed_m_s=0.03)  # down onto the cube top
    assert r.executed and "contact" in r.receipt, r.receipt
    tcp_z = driver.driver.tcp_pose("arm").position_m[2]
    assert tcp_z > c[2] + 0.01  # stopped on the cube, not pushed through it
    moved = driver.driver.privileged_state().object("red_cube").position_m - c
    assert np.linalg.norm(moved[:2]) < 0.01


def test_guard_driver_down_is_one_clear_error(domain_id: int, tmp_path: Path) -> None:
    from captain_ros.backends import make_backend

    identity_calibration(tmp_path / "calib")
    cfg = arm_config(tmp_path / "calib", domain_id, feedback_timeout_s=0.5)
    t0 = time.monotonic()
    with pytest.raises(HardwareError, match="no /joint_states within 0.5 s.*driver running"):
        make_backend("ros_arm", config=cfg)
    assert time.monotonic() - t0 < 10


def test_guard_action_server_missing_refuses_to_enable(
    domain_id: int, tmp_path: Path, ros_context, spinner
) -> None:
    """/joint_states alone (joint_state_broadcaster up, trajectory controller not active)."""
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from captain_ros.backends import make_backend
    from captain_ros.backends.ros_arm.simulated import SimulatedArmDriver

    sim = SimulatedArmDriver(image_size_px=32)
    try:
        names, pos, _vel, _eff = sim.joint_states()
    finally:
        sim.close()
    identity_calibration(tmp_path / "calib")
    node = Node("fake_broadcaster", context=ros_context)
    pub = node.create_publisher(JointState, "/joint_states", 10)
    node.create_timer(0.01, lambda: pub.publish(JointState(name=names, position=pos.tolist())))
    spinner.add(node)
    cfg = arm_config(tmp_path / "calib", domain_id, server_timeout_s=0.5)
    cfg = replace(cfg, safety=replace(cfg.safety, max_feedback_age_s=5.0))  # this guard only
    with pytest.raises(HardwareError, match="follow_joint_trajectory not available.*nothing was"):
        make_backend("ros_arm", config=cfg)


def test_guard_stale_joint_states_refuses_then_latches_mid_move(
    driver: InProcessDriver, arm
) -> None:
    q0 = arm.joint_state("arm").position_rad.copy()
    driver.driver.freeze_joint_states(1.0)  # a hung driver: messages go on, values do not...
    driver.node.destroy_timer(next(iter(driver.node.timers)))  # ...then none at all
    wait_until(
        lambda: arm.link_status("arm").feedback_age_s > FEEDBACK_AGE_S + 0.05,
        5.0,
        what="stale feedback",
    )
    with pytest.raises(HardwareError, match="stale.*nothing was commanded"):
        arm.servo({"arm": q0 + 0.01}, 0.02, ForceGuard())
    assert not arm.estopped
    assert np.allclose(driver.driver._q("arm"), q0, atol=1e-3)  # no motion


def test_guard_stale_feedback_mid_move_latches(driver: InProcessDriver, arm) -> None:
    q = arm.joint_state("arm").position_rad.copy()
    step = np.array([0.002, 0, 0, 0, 0, 0])
    for _ in range(3):  # a move under way
        q = q + step
        arm.servo({"arm": q}, 0.02, ForceGuard())
    driver.node.destroy_timer(next(iter(driver.node.timers)))  # joint_states stop mid-move
    with pytest.raises(EStopError, match="stale"):
        for _ in range(400):  # the stream goes on until the feedback is too old
            q = q + step
            arm.servo({"arm": q}, 0.02, ForceGuard())
    assert arm.estopped and "guard:link" in arm.latch.message()
    with pytest.raises(EStopError):  # latched until the explicit reset
        arm.servo({"arm": q}, 0.02, ForceGuard())


def test_guard_limit_exceeded_refused_before_motion_and_latched_mid_move(
    driver: InProcessDriver, arm
) -> None:
    q0 = arm.joint_state("arm").position_rad.copy()
    bad = q0.copy()
    bad[0] = float("nan")
    with pytest.raises(InvalidArgumentError, match="NaN"):
        arm.servo({"arm": bad}, 0.02, ForceGuard())
    arm.inner.spec.workspace_max_m[2] = arm.ee_pose("arm").position_m[2] - 0.01  # the box shrinks
    with pytest.raises(SafetyLimitError, match="leaves the workspace box.*nothing moved"):
        arm.servo({"arm": q0 + np.array([0.004, 0, 0, 0, 0, 0])}, 0.02, ForceGuard())
    assert not arm.estopped and np.allclose(driver.driver._q("arm"), q0, atol=1e-3)
    arm.inner.spec.workspace_max_m[2] = 0.6
    arm.config = replace(arm.config, max_effort_nm=1.0)
    with pytest.raises(EStopError, match="guard:current.*effort"):  # gravity alone exceeds 1 N m
        arm.servo({"arm": q0 + np.array([0.004, 0, 0, 0, 0, 0])}, 0.02, ForceGuard())
    assert arm.estopped
    time.sleep(0.2)
    assert driver.driver.status(driver.driver._tokens) in ("canceled", "succeeded")
    q_held = driver.driver._q("arm").copy()
    time.sleep(0.2)
    assert np.allclose(driver.driver._q("arm"), q_held, atol=1e-3)  # held after the latch
    arm.reset_estop()
    assert not arm.estopped


def test_guard_measured_joints_outside_limits_refuse_enable(
    driver: InProcessDriver, domain_id: int, tmp_path: Path
) -> None:
    from captain_ros.backends import make_backend

    q = driver.driver._q("arm")
    cfg = arm_config(tmp_path / "calib", domain_id)
    arms = dict(cfg.arms)
    a = arms["arm"]
    upper = list(a.upper_rad or [2.6, 3.4, 0.0, 1.8, 1.3, 1.7])
    upper[1] = float(q[1]) - 0.2  # the config says joint2 cannot be where the arm is
    arms["arm"] = replace(a, upper_rad=tuple(upper))
    bad = replace(cfg, arms=arms)
    with pytest.raises(HardwareError, match="joint2 = .* outside.*refusing to enable"):
        make_backend("ros_arm", config=bad)


def test_guard_unknown_config_key_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "arm.yaml"
    cfg.write_text(
        share_path("config", "ros_arm_piper.yaml")
        .read_text()
        .replace("joint_states_topic:", "joint_state_topic:")
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "captain_ros.cli.main",
            "run",
            "--backend",
            "ros_arm",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "ep"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "unknown ros_arm key(s) joint_state_topic; valid:" in lines[0]
    assert not (tmp_path / "ep").exists()
    out = subprocess.run(
        [sys.executable, "-m", "captain_ros.cli.main", "hw", "check", "--backend", "ros_arm"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        out.returncode == 2 and "xr1_arm.urdf does not exist: supply the arm's URDF" in out.stderr
    )


@pytest.mark.slow
def test_expert_episode_through_ros_arm_against_the_driver_process(
    domain_id: int, tmp_path: Path, child_process
) -> None:
    """The issue's done-when: the driver in its own process, the episode through the bridge."""
    from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.episode import run_one

    calib = tmp_path / "calib"
    drv = child_process(
        [
            "-m",
            "captain_ros.ros.arm_bridge.driver_node",
            "--ros-args",
            "-p",
            f"calibration_dir:={calib}",
            "-p",
            "task:=pick_place",
            "-p",
            "seed:=3",
            "-p",
            "image_size_px:=256",
        ],
        "arm_driver",
    )
    wait_until(
        lambda: (calib / "wrist.yaml").is_file() or drv.proc.poll() is not None,
        60.0,
        what="the driver's calibration files",
    )
    assert drv.proc.poll() is None, drv.output()[-3000:]
    cfg = write_config(
        tmp_path / "arm.yaml", calib, domain_id, EPISODE_FEEDBACK_AGE_S, EPISODE_GOAL_TIMEOUT_S
    )
    s = run_one(
        EpisodeConfig(
            "pick_place",
            3,
            str(tmp_path / "ep"),
            backend=BackendConfig("ros_arm", {"config": str(cfg)}),
            recording=RecordingConfig(report=False),
        )
    )
    assert s.outcome == "success_with_finish", (s.to_dict(), drv.output()[-2000:])
    lines = [json.loads(x) for x in (tmp_path / "ep" / "trajectory.jsonl").read_text().splitlines()]
    receipts = [c for x in lines for c in x.get("calls", []) if isinstance(c, dict)]
    assert receipts and s.physical_actions >= 4
    assert (tmp_path / "ep" / "bag" / "metadata.yaml").is_file()
