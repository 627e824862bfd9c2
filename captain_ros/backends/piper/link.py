"""One arm's CAN link: a ``piper_sdk`` ``C_PiperInterface_V2`` and its feedback in SI units.

The SDK runs unmodified: ``CreateCanBus(can, bustype)`` + ``ConnectPort()`` start its reader
thread, the getters return the newest decoded frames. Three details are adapted:

- on Linux the SDK opens a second bus for sending that it never reads; on socketcan the kernel
  drops what that socket buffers, but a python-can ``virtual`` queue would grow without bound, so
  for the virtual bus the send side reuses the receive bus;
- ``C_PiperInterface_V2`` is a per-channel singleton: every interface on ``can0`` in a process is
  the same object. A backend rebuilt on the same channel (the robot node loading a goal's scene
  builds the new backend before it closes the old one) then shared the old link's SDK, and the old
  link's ``DisconnectPort`` stopped the reader of the new one: its feedback froze and every move
  was refused as stale. Each link takes an interface of its own (:func:`_own_sdk`);
- ``DisconnectPort`` leaves the SDK's bus-monitor and frame-counter threads running;
  :meth:`PiperArmLink.close` stops them, so rebuilt links do not pile up threads.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from captain_ros.backends.piper import units
from captain_ros.core.errors import HardwareError

MOVE_J = 0x01
CAN_CONTROL = 0x01


@dataclass(frozen=True)
class ArmFeedback:
    """The newest feedback of one arm, SI units.

    Attributes:
        q_rad / qd_rad_s / effort_nm: Joint positions, motor speeds, joint efforts (from currents).
        motor_pos_rad: Motor encoder positions (high-speed frames) [rad].
        flange_m / flange_rpy_rad: The controller's own flange pose (its FK) in the arm base frame.
        gripper_m / gripper_effort_nm: Jaw opening [m], gripper effort [N m].
        age_s: Age of the newest joint frame [s] (``inf`` when none arrived yet).
        arm_status: The controller's status name (``NORMAL``, ``EMERGENCY_STOP``, ...).
        ctrl_mode: Control mode code (0x01 = CAN control).
        enabled: Per-motor enable bits (low-speed frames).
        faults: Driver faults (``J3 over-current``, ...).
    """

    q_rad: np.ndarray
    qd_rad_s: np.ndarray
    effort_nm: np.ndarray
    motor_pos_rad: np.ndarray
    flange_m: np.ndarray
    flange_rpy_rad: np.ndarray
    gripper_m: float
    gripper_effort_nm: float
    age_s: float
    arm_status: str
    ctrl_mode: int
    enabled: tuple[bool, ...]
    faults: tuple[str, ...]


class PiperArmLink:
    """The SDK interface of one arm on ``can_name`` (``bustype`` socketcan, or virtual)."""

    def __init__(self, can_name: str, bustype: str = "socketcan") -> None:
        from piper_sdk import C_PiperInterface_V2

        self.can_name = can_name
        self.bustype = bustype
        require_interface(can_name, bustype)
        try:
            self.sdk = _own_sdk(C_PiperInterface_V2, can_name)
            self.sdk.CreateCanBus(can_name, bustype=bustype, judge_flag=False)
        except Exception as exc:  # noqa: BLE001 - the SDK raises ConnectionError/ValueError
            raise HardwareError(f"cannot open CAN interface {can_name} ({bustype}): {exc}") from exc
        bus = self.sdk.GetCanBus()
        if bustype == "virtual" and bus.send_bus is not bus.recv_bus:
            bus.send_bus.shutdown()
            bus.send_bus = bus.recv_bus
        self.sdk.ConnectPort()

    def wait_feedback(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.feedback().age_s > 0.1:
            if time.monotonic() > deadline:
                raise HardwareError(
                    f"no feedback from the arm on {self.can_name} within "
                    f"{timeout_s:.1f} s: is it powered and on this interface?"
                )
            time.sleep(0.01)

    # --- feedback -------------------------------------------------------------------------------
    def feedback(self) -> ArmFeedback:
        s = self.sdk
        jm = s.GetArmJointMsgs()
        j = jm.joint_state
        q = units.mdeg_to_rad([j.joint_1, j.joint_2, j.joint_3, j.joint_4, j.joint_5, j.joint_6])
        hs = s.GetArmHighSpdInfoMsgs()
        motors = [hs.motor_1, hs.motor_2, hs.motor_3, hs.motor_4, hs.motor_5, hs.motor_6]
        qd = np.array([m.motor_speed for m in motors], dtype=float) / 1000.0
        effort = units.current_to_effort_nm(np.array([m.current for m in motors], dtype=float))
        motor_pos = np.array([m.pos for m in motors], dtype=float) / 1000.0
        ep = s.GetArmEndPoseMsgs().end_pose
        flange = np.array([ep.X_axis, ep.Y_axis, ep.Z_axis], dtype=float) / units.UM_PER_M
        rpy = np.radians(np.array([ep.RX_axis, ep.RY_axis, ep.RZ_axis], dtype=float) / 1000.0)
        g = s.GetArmGripperMsgs().gripper_state
        st = s.GetArmStatus().arm_status
        low = s.GetArmLowSpdInfoMsgs()
        lows = [low.motor_1, low.motor_2, low.motor_3, low.motor_4, low.motor_5, low.motor_6]
        faults = []
        for k, m in enumerate(lows):
            f = m.foc_status
            if f.driver_overcurrent:
                faults.append(f"J{k + 1} over-current")
            if f.driver_error_status:
                faults.append(f"J{k + 1} driver error")
            if f.collision_status:
                faults.append(f"J{k + 1} collision protection")
        stamp = jm.time_stamp
        age = time.time() - stamp if stamp > 0 else float("inf")
        return ArmFeedback(
            q,
            qd,
            effort,
            motor_pos,
            flange,
            rpy,
            units.um_to_m(g.grippers_angle),
            units.mnm_to_nm(g.grippers_effort),
            max(0.0, age),
            st.arm_status.name,
            int(st.ctrl_mode.value),
            tuple(bool(m.foc_status.driver_enable_status) for m in lows),
            tuple(faults),
        )

    # --- commands -------------------------------------------------------------------------------
    def enable(self, timeout_s: float, speed_rate_pct: int) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.sdk.EnablePiper():
            if time.monotonic() > deadline:
                off = [k + 1 for k, e in enumerate(self.sdk.GetArmEnableStatus()) if not e]
                raise HardwareError(
                    f"arm on {self.can_name}: motors {off} did not enable within "
                    f"{timeout_s:.1f} s (check power, e-stop button, faults)"
                )
            time.sleep(0.01)
        self.set_mode(speed_rate_pct)
        while self.feedback().ctrl_mode != CAN_CONTROL:  # the status frame confirms the mode
            if time.monotonic() > deadline:
                raise HardwareError(f"arm on {self.can_name} did not enter CAN control mode")
            time.sleep(0.005)
            self.set_mode(speed_rate_pct)

    def set_mode(self, speed_rate_pct: int) -> None:
        self.sdk.MotionCtrl_2(CAN_CONTROL, MOVE_J, int(speed_rate_pct), 0x00)

    def disable(self) -> None:
        self.sdk.DisablePiper()

    def joint_ctrl(self, q_rad: np.ndarray) -> None:
        self.sdk.JointCtrl(*units.rad_to_mdeg(q_rad))

    def gripper_ctrl(self, opening_m: float, effort_nm: float) -> None:
        self.sdk.GripperCtrl(units.m_to_um(opening_m), units.nm_to_mnm(effort_nm), 0x01, 0x00)

    def crash_protection(self, level: int) -> None:
        self.sdk.CrashProtectionConfig(*([int(level)] * 6))

    def emergency_stop(self) -> None:
        self.sdk.EmergencyStop(0x01)

    def resume(self) -> None:
        self.sdk.EmergencyStop(0x02)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing never raises
            self.sdk.DisconnectPort()
        # what DisconnectPort leaves running: the bus monitor (20 Hz) and the frame counter (10 Hz)
        private = "_C_PiperInterface_V2__"
        with contextlib.suppress(Exception):
            getattr(self.sdk, private + "can_monitor_stop_event").set()
            getattr(self.sdk, private + "fps_counter").stop()


def _own_sdk(cls: Any, can_name: str) -> Any:
    """A ``C_PiperInterface_V2`` on ``can_name`` that no other link shares: the SDK's per-channel
    singleton cache is bypassed (the entry is dropped before and after the construction), so
    closing one link never disconnects another on the same channel."""
    with cls._lock:
        cls._instances.pop(can_name, None)
    sdk = cls(can_name, judge_flag=False, can_auto_init=False)
    with cls._lock:
        if cls._instances.get(can_name) is sdk:
            del cls._instances[can_name]
    return sdk


def require_interface(can_name: str, bustype: str = "socketcan") -> None:
    """Raise :class:`HardwareError` (what to run) when a socketcan interface is down or missing."""
    if bustype == "socketcan" and not _interface_up(can_name):
        raise HardwareError(
            f"CAN interface {can_name} is down or missing; bring it up with "
            f"`sudo ip link set {can_name} up type can bitrate 1000000`"
        )


def _interface_up(name: str) -> bool:
    try:
        with open(f"/sys/class/net/{name}/operstate") as fh:
            return fh.read().strip() in ("up", "unknown")
    except OSError:
        return False
