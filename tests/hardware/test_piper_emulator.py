"""The PiPER backend (unmodified piper_sdk) against the CAN emulator: the device and every guard."""

from __future__ import annotations

import time

import numpy as np
import pytest

from captain_ros.backends import make_backend
from captain_ros.backends.piper import PiperConfig
from captain_ros.backends.piper_emulator import frames
from captain_ros.core.errors import (
    EStopError,
    HardwareError,
    InvalidArgumentError,
    SafetyLimitError,
)
from captain_ros.core.types import ForceGuard
from captain_ros.motion import MotionService
from captain_ros.tasks import get_task
from tests.hardware.conftest import fresh_can


def _wait(cond, timeout_s: float = 2.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def test_enable_state_machine_and_feedback_rates(piper) -> None:  # type: ignore[no-untyped-def]
    sdk = piper.links["arm"].sdk
    st = piper.link_status("arm")
    assert st.connected and st.enabled and st.feedback_age_s < 0.05 and not st.faults
    assert st.twin_error_m < 1e-4  # the twin (MJCF) agrees with the vendor FK
    n0, t0 = piper.emulator.frames_sent, time.monotonic()
    stamps = set()
    while time.monotonic() - t0 < 0.5:
        stamps.add(sdk.GetArmJointMsgs().time_stamp)
        time.sleep(0.002)
    rate = (piper.emulator.frames_sent - n0) / (time.monotonic() - t0)
    assert rate > 1500  # 14 frames per 5 ms cycle (200 Hz) + the 10 Hz low-speed ones
    assert len(stamps) > 50  # the SDK decodes fresh joint feedback at >= 100 Hz
    piper.disable("arm")
    assert _wait(lambda: not piper.link_status("arm").enabled)
    with pytest.raises(HardwareError, match="not enabled"):
        piper.servo({"arm": piper.joint_state("arm").position_rad}, 0.02, ForceGuard())
    piper.enable()
    assert piper.link_status("arm").enabled


def test_joint_motion_respects_the_velocity_limit(piper) -> None:  # type: ignore[no-untyped-def]
    q0 = piper.joint_state("arm").position_rad.copy()
    target = q0 + np.array([0.5, 0, 0, 0, 0, 0])
    rep = piper.servo({"arm": target}, 0.02, ForceGuard())
    step = rep.q_applied["arm"] - q0
    assert 0 < step[0] <= piper.spec.arm("arm").max_velocity_rad_s[0] * 0.02 + 1e-9
    peak = 0.0
    for _ in range(40):
        piper.servo({"arm": target}, 0.02, ForceGuard())
        peak = max(peak, abs(piper.joint_state("arm").velocity_rad_s[0]))
    assert peak <= 3.14 * 1.05  # J1 limit 3.14 rad/s (accelerating at <= 5 rad/s^2)
    assert piper.joint_state("arm").position_rad[0] > q0[0] + 0.1


def test_gripper_with_effort(piper) -> None:  # type: ignore[no-untyped-def]
    m = MotionService(piper)
    assert m.move_to(jaw=0.02).success
    assert abs(piper.gripper("arm").opening_m - 0.02) < 2e-3


def test_guarded_move_agrees_with_mujoco(piper) -> None:  # type: ignore[no-untyped-def]
    """The same guarded descent onto the red cube: stop reason, executed distance within 1 cm,
    stop height within 1 cm, peak force within 3 N (tolerances stated in docs/hardware.md)."""
    from captain_ros.backends import make_backend

    scene = get_task("pick_place").sample(3)
    sim = make_backend("mujoco", scene)
    out = []
    for b in (sim, piper):
        m = MotionService(b)
        c = b.privileged_state().object("red_cube").position_m.copy()
        assert m.move_to([c[0], c[1], c[2] + 0.10], [0, 0, 1, 0]).success
        assert m.move_to(jaw="close").success
        r = m.move_to([c[0], c[1], 0.022], speed_m_s=0.03)
        out.append((r, b.ee_pose("arm").position_m[2]))
    sim.close()
    (rs, zs), (rp, zp) = out
    assert rs.failure_category is not None and rs.failure_category.value == "contact"
    assert rp.failure_category is not None and rp.failure_category.value == "contact", rp.receipt
    assert abs(rs.value["executed_distance_m"] - rp.value["executed_distance_m"]) < 0.01
    assert abs(zs - zp) < 0.01
    assert abs(rs.value["peak_force_n"] - rp.value["peak_force_n"]) < 3.0


def test_operator_estop_latches_until_explicit_reset(piper) -> None:  # type: ignore[no-untyped-def]
    piper.estop("test")
    assert _wait(lambda: piper.links["arm"].feedback().arm_status == "EMERGENCY_STOP")
    with pytest.raises(EStopError):
        piper.servo({"arm": piper.joint_state("arm").position_rad}, 0.02, ForceGuard())
    assert piper.estopped
    piper.reset_estop()
    assert not piper.estopped and piper.link_status("arm").enabled
    assert MotionService(piper).move_to(jaw=0.05).success


def test_hardware_stop_latches(piper) -> None:  # type: ignore[no-untyped-def]
    """The controller's own stop (crash protection / its e-stop) latches the layer's e-stop."""
    piper.links["arm"].sdk.EmergencyStop(0x01)  # e.g. the arm's own stop button
    assert _wait(lambda: piper.link_status("arm").hardware_estop == "EMERGENCY_STOP")
    with pytest.raises(EStopError, match="hardware"):
        piper.servo({"arm": piper.joint_state("arm").position_rad}, 0.02, ForceGuard())
    assert piper.estopped


def test_stale_feedback_refuses_and_latches_mid_motion(piper) -> None:  # type: ignore[no-untyped-def]
    emu = piper.emulator
    q0 = piper.joint_state("arm").position_rad.copy()
    emu.drop_feedback("arm", 0.5)
    time.sleep(0.2)
    with pytest.raises(HardwareError, match="stale"):  # nothing under way: refused, no latch
        piper.servo({"arm": q0}, 0.02, ForceGuard())
    assert not piper.estopped
    time.sleep(0.4)
    target = q0 + np.array([0.3, 0, 0, 0, 0, 0])
    piper.servo({"arm": target}, 0.02, ForceGuard())  # a move is under way
    emu.drop_feedback("arm", 0.5)
    time.sleep(0.14)  # stale (> 100 ms) before the 200 ms watchdog would hold the arm
    with pytest.raises(EStopError, match="stale"):
        piper.servo({"arm": target}, 0.02, ForceGuard())
    assert piper.estopped


def test_enable_waits_out_one_late_frame_but_refuses_dead_feedback(piper) -> None:  # type: ignore[no-untyped-def]
    emu = piper.emulator
    piper.disable("arm")
    assert _wait(lambda: not piper.link_status("arm").enabled)
    emu.drop_feedback("arm", 0.3)  # a hiccup: stale now, fresh again within the enable wait
    time.sleep(0.15)
    assert piper.link_status("arm").feedback_age_s > 0.1
    piper.enable()
    assert piper.link_status("arm").enabled
    piper.disable("arm")
    assert _wait(lambda: not piper.link_status("arm").enabled)
    emu.drop_feedback("arm", 3.0)  # feedback that stays stale is refused, after the wait
    time.sleep(0.15)
    t0 = time.monotonic()
    with pytest.raises(HardwareError, match=r"feedback is stale .*refusing to enable"):
        piper.enable()
    assert time.monotonic() - t0 > 0.9  # it waited; no upper bound: CI hosts are slow
    assert not piper.link_status("arm").enabled


def test_disabled_motor_refuses(piper) -> None:  # type: ignore[no-untyped-def]
    piper.emulator.disable_motor("arm", 3)
    assert _wait(lambda: not piper.link_status("arm").enabled)
    with pytest.raises(HardwareError, match="not enabled"):
        piper.servo({"arm": piper.joint_state("arm").position_rad}, 0.02, ForceGuard())
    r = MotionService(piper).move_to(jaw=0.03)
    assert not r.success


def test_over_current_latches(piper) -> None:  # type: ignore[no-untyped-def]
    piper.emulator.over_current("arm", 2)
    assert _wait(lambda: "J2 over-current" in piper.link_status("arm").faults)
    q = piper.joint_state("arm").position_rad
    with pytest.raises(EStopError, match="current"):
        piper.servo({"arm": q + 0.01}, 0.02, ForceGuard(stop_force_n=1e6, emergency_force_n=1e6))
    assert piper.estopped


def test_joint_limit_and_acceleration_are_clipped(piper) -> None:  # type: ignore[no-untyped-def]
    spec = piper.spec.arm("arm")
    q0 = piper.joint_state("arm").position_rad.copy()
    beyond = q0.copy()
    beyond[4] = spec.upper_rad[4] + 1.0
    rep = piper.servo({"arm": beyond}, 0.02, ForceGuard())
    assert rep.q_applied["arm"][4] <= spec.upper_rad[4]
    assert abs(rep.q_applied["arm"][4] - q0[4]) <= piper.config.max_accel_rad_s2 * 0.02**2 + 1e-9
    assert "acceleration" in piper.last_clipped["arm"]


def test_workspace_box_on_hardware(piper) -> None:  # type: ignore[no-untyped-def]
    spec = piper.spec
    q0 = piper.joint_state("arm").position_rad.copy()
    spec.workspace_max_m[0] = piper.ee_pose("arm").position_m[0] - 0.01  # box shrinks behind tool
    try:
        with pytest.raises(SafetyLimitError, match="workspace"):
            piper.servo({"arm": q0}, 0.02, ForceGuard())
    finally:
        spec.workspace_max_m[0] = 0.75
    assert not piper.estopped


def test_watchdog_holds_when_commands_stop(piper) -> None:  # type: ignore[no-untyped-def]
    q0 = piper.joint_state("arm").position_rad.copy()
    target = q0 + np.array([1.0, 0, 0, 0, 0, 0])
    for _ in range(10):
        piper.servo({"arm": target}, 0.02, ForceGuard())  # then the harness goes silent
    assert _wait(lambda: piper.watchdog.expired >= 1, 1.0)
    time.sleep(0.5)
    dev = piper.emulator.devices["arm"]
    assert dev.target_rad is not None and np.allclose(dev.setpoint_rad, dev.target_rad, atol=1e-6)
    assert piper.joint_state("arm").position_rad[0] < q0[0] + 0.5  # it did not run to +1 rad


def test_enable_refused_when_twin_and_joints_disagree() -> None:
    b = make_backend(
        "piper",
        get_task("pick_place").sample(3),
        emulate=True,
        can=fresh_can(),
        image_size_px=64,
        enable=False,
    )
    try:
        b.emulator.offset_joint_feedback("arm", 2, 0.1)
        time.sleep(0.05)
        with pytest.raises(SafetyLimitError, match="refusing to enable"):
            b.enable()
        assert not b.link_status("arm").enabled
    finally:
        b.close()


def test_bus_down_and_bad_config_are_clear() -> None:
    with pytest.raises(HardwareError, match="can9 is down or missing"):
        make_backend("piper", config=PiperConfig(can={"arm": "can9"}))
    with pytest.raises(InvalidArgumentError, match="unknown piper key.*speed_rate.*valid"):
        PiperConfig.from_dict({"speed_rate": 50})
    with pytest.raises(HardwareError, match="no feedback"):  # virtual bus, nobody answers
        make_backend(
            "piper",
            config=PiperConfig(can={"arm": fresh_can()}, bustype="virtual", feedback_timeout_s=0.2),
        )


def test_status_frame_codes() -> None:
    assert frames.ARM_EMERGENCY_STOP == 0x01 and frames.ARM_COLLISION == 0x07
