"""Unit conversions and frame layouts, checked against piper_sdk's own encoder/decoder and FK."""

from __future__ import annotations

import math

import can
import numpy as np
import pytest

pytest.importorskip("piper_sdk")
from piper_sdk.kinematics.piper_fk import C_PiperForwardKinematics  # noqa: E402
from piper_sdk.piper_msgs.msg_v2 import PiperMessage  # noqa: E402
from piper_sdk.piper_msgs.msg_v2.feedback.arm_feedback_high_spd import (  # noqa: E402
    ArmMsgFeedbackHighSpd,
)
from piper_sdk.protocol.protocol_v2.piper_protocol_v2 import C_PiperParserV2  # noqa: E402

from captain_ros.backends.piper import units  # noqa: E402
from captain_ros.backends.piper_emulator import frames  # noqa: E402


def _decode(can_id: int, data: bytes) -> PiperMessage:
    msg = PiperMessage()
    assert C_PiperParserV2().DecodeMessage(can.Message(arbitration_id=can_id, data=data), msg)
    return msg


def test_joint_angles_in_millidegrees() -> None:
    q = np.array([0.0, 1.0, -math.pi / 2, 0.5, -1.3, 1.7])
    mdeg = units.rad_to_mdeg(q)
    assert mdeg[2] == -90000 and mdeg[1] == round(math.degrees(1.0) * 1000)
    assert np.allclose(units.mdeg_to_rad(mdeg), q, atol=math.radians(0.0005))


def test_lengths_in_micrometres_and_efforts_in_millinewton_metres() -> None:
    assert units.m_to_um(0.07) == 70000 and units.um_to_m(70000) == pytest.approx(0.07)
    assert units.nm_to_mnm(2.5) == 2500 and units.mnm_to_nm(2500) == pytest.approx(2.5)


def test_current_to_effort_matches_the_sdk_coefficients() -> None:
    for j, can_id in enumerate(frames.HIGH_SPEED):
        sdk = ArmMsgFeedbackHighSpd(can_id=can_id, current=1000)
        assert units.current_to_effort_nm(np.eye(6)[j] * 1000)[j] == pytest.approx(
            sdk.cal_effort() / 1000.0
        )
    tau = np.array([3.0, -5.0, 1.0, 0.4, -0.2, 0.1])
    back = units.current_to_effort_nm(np.array(units.effort_to_current_ma(tau), dtype=float))
    assert np.allclose(back, tau, atol=2e-3)


def test_euler_convention_matches_the_sdk_fk() -> None:
    q = [0.3, 1.2, -0.9, 0.4, 0.6, -0.5]
    fk = C_PiperForwardKinematics(0x01)
    x, y, z, rx, ry, rz = fk.CalFK(q)[5]
    r = units.euler_zyx_to_matrix(*np.radians([rx, ry, rz]))
    assert np.allclose(r @ r.T, np.eye(3), atol=1e-9)
    assert np.allclose(np.degrees(units.matrix_to_euler_zyx(r)), [rx, ry, rz], atol=1e-6)


def test_feedback_frames_decode_with_the_sdk_parser() -> None:
    st = _decode(frames.STATUS, frames.status(0x01, frames.ARM_EMERGENCY_STOP, 0x01, False, 0x03))
    assert st.arm_status_msgs.ctrl_mode == 0x01 and st.arm_status_msgs.arm_status == 0x01
    assert st.arm_status_msgs.err_code == 0x03
    j = _decode(frames.JOINT_FEEDBACK[1], frames.pair_i32(-12345, 67890))
    assert (j.arm_joint_feedback.joint_3, j.arm_joint_feedback.joint_4) == (-12345, 67890)
    g = _decode(frames.GRIPPER_FEEDBACK, frames.gripper(35000, -1200, 0x40))
    assert (
        g.gripper_feedback.grippers_angle == 35000 and g.gripper_feedback.grippers_effort == -1200
    )
    h = _decode(frames.HIGH_SPEED[3], frames.high_speed(-250, 4000, 1234))
    m = h.arm_high_spd_feedback_4
    assert (m.motor_speed, m.current, m.pos) == (-250, 4000, 1234)
    low = _decode(
        frames.LOW_SPEED[0],
        frames.low_speed(240, 35, 30, frames.FOC_ENABLED | frames.FOC_OVER_CURRENT, 5),
    )
    foc = low.arm_low_spd_feedback_1.foc_status
    assert foc.driver_enable_status and foc.driver_overcurrent and not foc.collision_status
    lim = _decode(frames.MOTOR_ANGLE_LIMIT_MAX_SPD, frames.motor_limits(2, 1950, 0, 3400))
    f = lim.arm_feedback_current_motor_angle_limit_max_spd
    assert (f.motor_num, f.max_angle_limit, f.min_angle_limit, f.max_joint_spd) == (
        2,
        1950,
        0,
        3400,
    )


def test_command_frames_decode_as_the_sdk_encodes_them() -> None:
    from piper_sdk.piper_msgs.msg_v2 import ArmMsgType
    from piper_sdk.piper_msgs.msg_v2.transmit.arm_gripper_ctrl import ArmMsgGripperCtrl
    from piper_sdk.piper_msgs.msg_v2.transmit.arm_joint_ctrl import ArmMsgJointCtrl

    parser, tx = C_PiperParserV2(), can.Message()
    msg = PiperMessage()
    msg.type_ = ArmMsgType.PiperMsgJointCtrl_56
    msg.arm_joint_ctrl = ArmMsgJointCtrl(0, 0, 0, 0, -70000, 12345)
    parser.EncodeMessage(msg, tx)
    cmd = frames.decode(tx.arbitration_id, bytes(tx.data))
    assert cmd is not None and cmd.fields == {"first": 4, "a": -70000, "b": 12345}
    msg.type_ = ArmMsgType.PiperMsgGripperCtrl
    msg.arm_gripper_ctrl = ArmMsgGripperCtrl(50000, 3000, 0x01, 0)
    parser.EncodeMessage(msg, tx)
    cmd = frames.decode(tx.arbitration_id, bytes(tx.data))
    assert cmd is not None and cmd.fields["angle_um"] == 50000 and cmd.fields["effort_mnm"] == 3000
