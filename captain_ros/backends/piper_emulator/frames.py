"""The PiPER CAN frames the emulator reads and writes (ids and layouts of piper_sdk 0.6.2, protocol
V2; every field big-endian, 8-byte data). The SDK encodes the commands and decodes the feedback;
this module is the device side: it decodes commands and encodes feedback.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# commands (host -> arm)
MOTION_CTRL_1 = 0x150  # emergency stop / resume, trajectory and teach control
MOTION_CTRL_2 = 0x151  # control mode, move mode, speed rate, MIT mode
JOINT_CTRL = (0x155, 0x156, 0x157)  # J1&J2, J3&J4, J5&J6 in 0.001 deg
GRIPPER_CTRL = 0x159
MOTOR_ENABLE = 0x471
SEARCH_MOTOR_LIMITS = 0x472
JOINT_CONFIG = 0x475
PARAM_ENQUIRY = 0x477
CRASH_PROTECTION_CONFIG = 0x47A
# feedback (arm -> host)
STATUS = 0x2A1
END_POSE = (0x2A2, 0x2A3, 0x2A4)
JOINT_FEEDBACK = (0x2A5, 0x2A6, 0x2A7)
GRIPPER_FEEDBACK = 0x2A8
HIGH_SPEED = tuple(range(0x251, 0x257))
LOW_SPEED = tuple(range(0x261, 0x267))
MOTOR_ANGLE_LIMIT_MAX_SPD = 0x473
CRASH_PROTECTION_FEEDBACK = 0x47B
MOTOR_MAX_ACC = 0x47C

# arm_status codes of 0x2A1 (ArmMsgFeedbackStatusEnum.ArmStatus)
ARM_NORMAL = 0x00
ARM_EMERGENCY_STOP = 0x01
ARM_COLLISION = 0x07
ARM_JOINT_STATUS_ERR = 0x09
# driver status bits of the low-speed feedback (foc_status)
FOC_OVER_CURRENT = 1 << 2
FOC_COLLISION = 1 << 4
FOC_ENABLED = 1 << 6


def pair_i32(a: int, b: int) -> bytes:
    return struct.pack(">ii", int(a), int(b))


def status(
    ctrl_mode: int, arm_status: int, move_mode: int, motion_done: bool, err_code: int = 0
) -> bytes:
    """0x2A1: ctrl mode, arm status, mode feed, teach status, motion status, trajectory, err."""
    return struct.pack(
        ">BBBBBBH",
        ctrl_mode,
        arm_status,
        move_mode,
        0,
        0 if motion_done else 1,
        0,
        err_code & 0xFFFF,
    )


def gripper(angle_um: int, effort_mnm: int, status_code: int) -> bytes:
    """0x2A8: stroke [0.001 mm] int32, effort [0.001 N m] int16, status code, reserved."""
    effort = max(-32768, min(32767, int(effort_mnm)))
    return struct.pack(">ihBB", int(angle_um), effort, status_code & 0xFF, 0)


def high_speed(speed_mrad_s: int, current_ma: int, pos_mrad: int) -> bytes:
    """0x251-0x256: speed [0.001 rad/s] int16, current [0.001 A] int16, position int32."""
    clamp = lambda v: max(-32768, min(32767, int(v)))  # noqa: E731
    return struct.pack(">hhi", clamp(speed_mrad_s), clamp(current_ma), int(pos_mrad))


def low_speed(
    voltage_dv: int, foc_temp_c: int, motor_temp_c: int, foc_status: int, bus_current_ma: int
) -> bytes:
    """0x261-0x266: voltage [0.1 V], driver temp, motor temp, driver status bits, bus current."""
    return struct.pack(
        ">HhbBH", voltage_dv, foc_temp_c, motor_temp_c, foc_status & 0xFF, bus_current_ma & 0xFFFF
    )


def motor_limits(motor: int, max_deg10: int, min_deg10: int, max_spd_mrad_s: int) -> bytes:
    """0x473: motor, max/min angle [0.1 deg] int16, max speed [0.001 rad/s] uint16."""
    return struct.pack(">BhhHB", motor, max_deg10, min_deg10, max_spd_mrad_s, 0)


def motor_max_acc(motor: int, max_acc_mrad_s2: int) -> bytes:
    """0x47C: motor, max acceleration [0.001 rad/s^2] uint16."""
    return struct.pack(">BH5x", motor, max_acc_mrad_s2)


def crash_levels(levels: list[int]) -> bytes:
    """0x47B: six crash-protection levels (0 = off, 1-8)."""
    return bytes([*(int(v) & 0xFF for v in levels[:6]), 0, 0])


@dataclass(frozen=True)
class Command:
    """One decoded host command: ``kind`` and its fields."""

    kind: str
    fields: dict[str, int]


def decode(can_id: int, data: bytes) -> Command | None:
    """Decode a host command frame; ``None`` for ids the arm ignores (e.g. its own feedback)."""
    d = bytes(data).ljust(8, b"\0")
    if can_id == MOTION_CTRL_1:
        return Command("motion_ctrl_1", {"emergency_stop": d[0], "track": d[1], "teach": d[2]})
    if can_id == MOTION_CTRL_2:
        return Command(
            "motion_ctrl_2",
            {"ctrl_mode": d[0], "move_mode": d[1], "speed_rate": d[2], "mit_mode": d[3]},
        )
    if can_id in JOINT_CTRL:
        a, b = struct.unpack(">ii", d)
        k = JOINT_CTRL.index(can_id)
        return Command("joint_ctrl", {"first": 2 * k, "a": a, "b": b})
    if can_id == GRIPPER_CTRL:
        angle, effort, code, zero = struct.unpack(">iHBB", d)
        return Command(
            "gripper_ctrl",
            {"angle_um": angle, "effort_mnm": effort, "code": code, "set_zero": zero},
        )
    if can_id == MOTOR_ENABLE:
        return Command("motor_enable", {"motor": d[0], "flag": d[1]})
    if can_id == SEARCH_MOTOR_LIMITS:
        return Command("search_limits", {"motor": d[0], "content": d[1]})
    if can_id == CRASH_PROTECTION_CONFIG:
        return Command("crash_protection", {f"j{i + 1}": d[i] for i in range(6)})
    if can_id == PARAM_ENQUIRY:
        return Command("param_enquiry", {"enquiry": d[0], "setting": d[1], "feedback_48x": d[2]})
    if can_id == JOINT_CONFIG:
        return Command("joint_config", {"motor": d[0], "clear_err": d[5]})
    return None
