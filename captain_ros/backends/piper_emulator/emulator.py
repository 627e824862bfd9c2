"""A PiPER rig emulated on python-can's ``virtual`` bus: the unmodified piper_sdk talks to it.

The kernel's ``vcan`` module is not available on this machine kind (``ip link add ... type vcan``
fails), so the emulator shares a process with the SDK and answers on the in-process virtual bus
(one channel per arm, e.g. ``can0``/``can1``). Physics are real: a :class:`MujocoBackend` holds
the arm(s) and the task scene; every 5 ms cycle it drains the command frames, runs each arm's
controller (:class:`ArmDevice`: enable state machine, planner with velocity/acceleration limits,
crash protection, e-stop), steps MuJoCo in real time and streams feedback at the arm's rates:
status, end pose (the vendor FK, as the controller computes it), joints, gripper and the
high-speed driver frames (speed, current = the motor torque incl. gravity, position) every cycle
(200 Hz), the low-speed driver frames (enable/fault bits) at 10 Hz. Injected faults: dropped
feedback, a disabled motor, an over-current. Cameras render the same scene (:mod:`.camera`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

import can
import numpy as np
from piper_sdk.kinematics.piper_fk import C_PiperForwardKinematics

from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.backends.mujoco import model as rigmodel
from captain_ros.backends.piper.units import (
    GRIPPER_EFFORT_MAX_MNM,
    effort_to_current_ma,
    m_to_um,
)
from captain_ros.backends.piper_emulator import frames
from captain_ros.backends.piper_emulator.device import GRIPPER_N_PER_NM, OVER_CURRENT_MA, ArmDevice
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.core.types import CameraFrame, ForceGuard

CYCLE_S = 0.005
"""Controller cycle and high-rate feedback period [s] (200 Hz)."""
LOW_SPEED_EVERY = 20
"""Low-speed driver frames every this many cycles (10 Hz)."""
MAX_ACCEL_RAD_S2 = np.array([5.0, 5.0, 5.0, 8.0, 8.0, 8.0])
"""Joint acceleration limits of the emulated controller [rad/s^2] (0x47C reply)."""
_FREE = ForceGuard(stop_force_n=1e9, emergency_force_n=1e9)


class PiperEmulator:
    """Emulated PiPER arm(s) on virtual CAN channels, physics in MuJoCo, real time.

    Args:
        scene: Task scene (``None``: empty table of ``rig``).
        channels: Arm name -> virtual CAN channel (default ``{"arm": "can0"}`` or
            ``{"left": "can0", "right": "can1"}`` for the dual rig).
        rig: ``"piper"`` or ``"piper_dual"`` when no scene is given.
        image_size_px: Camera resolution [px].
    """

    def __init__(
        self,
        scene: SceneSpec | None = None,
        channels: Mapping[str, str] | None = None,
        rig: str = "piper",
        image_size_px: int = 512,
    ) -> None:
        self.sim = MujocoBackend(scene, rig=rig, image_size_px=image_size_px)
        self.rig = self.sim.rig
        names = self.sim.spec.arm_names
        default = {"arm": "can0"} if len(names) == 1 else {"left": "can0", "right": "can1"}
        self.channels = dict(channels or default)
        if set(self.channels) != set(names):
            raise ValueError(f"channels must name the arms {names}, got {sorted(self.channels)}")
        m = self.sim.model
        self._idx = {
            a: rigmodel.index_arm(m, a, p) for a, p in rigmodel.ARM_PREFIXES[self.rig].items()
        }
        self.devices = {
            a: ArmDevice(
                self.sim.spec.arm(a).lower_rad,
                self.sim.spec.arm(a).upper_rad,
                self.sim.spec.arm(a).max_velocity_rad_s,
                MAX_ACCEL_RAD_S2.copy(),
            )
            for a in names
        }
        self._fk = C_PiperForwardKinematics(0x01)
        self.lock = threading.RLock()
        self._buses = {
            a: can.Bus(interface="virtual", channel=ch, receive_own_messages=False)
            for a, ch in self.channels.items()
        }
        self._drop_until: dict[str, float] = dict.fromkeys(names, 0.0)
        self._drop_ids: dict[str, frozenset[int] | None] = dict.fromkeys(names)
        self.joint_offset_rad = {a: np.zeros(6) for a in names}
        self._render = ThreadPoolExecutor(max_workers=1, thread_name_prefix="emu-render")
        self.cycles = 0
        self.frames_sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="piper-emulator", daemon=True)
        self._thread.start()

    # --- faults ---------------------------------------------------------------------------------
    def drop_feedback(self, arm: str, duration_s: float, ids: Iterable[int] | None = None) -> None:
        """Stop sending feedback frames (all, or ``ids``) of ``arm`` for ``duration_s`` [s]."""
        with self.lock:
            self._drop_ids[arm] = None if ids is None else frozenset(ids)
            self._drop_until[arm] = time.monotonic() + duration_s

    def disable_motor(self, arm: str, joint: int) -> None:
        """Fault: motor ``joint`` (1-6) drops out (enable bit cleared, stops following)."""
        with self.lock:
            d = self.devices[arm]
            d.faulty_motors.add(joint - 1)
            d.enabled[joint - 1] = False

    def over_current(self, arm: str, joint: int, on: bool = True) -> None:
        """Fault: motor ``joint`` (1-6) reports an over-current (driver bit + current)."""
        with self.lock:
            d = self.devices[arm]
            (d.over_current.add if on else d.over_current.discard)(joint - 1)

    def offset_joint_feedback(self, arm: str, joint: int, offset_rad: float) -> None:
        """Fault: joint ``joint`` (1-6) reports its angle off by ``offset_rad`` (a slipped or
        mis-zeroed joint sensor; the motor encoder and the controller's pose stay true)."""
        with self.lock:
            self.joint_offset_rad[arm][joint - 1] = offset_rad

    def clear_faults(self) -> None:
        with self.lock:
            for d in self.devices.values():
                d.faulty_motors.clear()
                d.over_current.clear()
            for a in self._drop_until:
                self._drop_until[a] = 0.0
                self.joint_offset_rad[a][:] = 0.0

    # --- ground truth / cameras ----------------------------------------------------------------
    def privileged_state(self) -> PrivilegedState:
        """The emulated world's simulator ground truth (tests and host success only)."""
        with self.lock:
            return self.sim.privileged_state()

    def render(self, camera: str) -> CameraFrame:
        """One RGB-D frame of ``camera`` from the emulated scene, on the render thread. Only the
        state copy is taken under the lock: the controller loop keeps streaming feedback while the
        frame renders (a real rig's cameras never pause its CAN stream)."""

        def grab() -> CameraFrame:
            with self.lock:
                state = self.sim.state_copy()
            return self.sim.capture([camera], state=state)[camera]

        return self._render.submit(grab).result()

    def flange_pose_m(self, arm: str) -> np.ndarray:
        """World 4x4 pose of ``arm``'s flange (link6) in the emulated world."""
        with self.lock:
            pose = self.sim.ee_pose(arm).matrix()
        tcp_from_flange = np.eye(4)
        tcp_from_flange[2, 3] = -0.13
        return pose @ tcp_from_flange

    # --- the real-time loop ---------------------------------------------------------------------
    def _run(self) -> None:
        t0 = time.monotonic()
        steps_done = 0
        dt = self.sim.model.opt.timestep
        while not self._stop.is_set():
            for a, bus in self._buses.items():
                self._drain(a, bus)
            want = int((time.monotonic() - t0) / dt)
            n = min(want - steps_done, 25)  # after a stall (render), catch up at most 50 ms
            if want - steps_done > 25:
                steps_done = want - 25
            if n > 0:
                with self.lock:
                    self._cycle(n * dt)
                steps_done += n
            self.cycles += 1
            self._publish(self.cycles)
            nxt = t0 + (steps_done * dt) + CYCLE_S
            self._stop.wait(max(0.0, min(CYCLE_S, nxt - time.monotonic())))

    def _drain(self, arm: str, bus: can.BusABC) -> None:
        while True:
            msg = bus.recv(timeout=0.0)
            if msg is None:
                return
            cmd = frames.decode(msg.arbitration_id, bytes(msg.data))
            if cmd is not None:
                with self.lock:
                    self.devices[arm].handle(cmd, self._q(arm))

    def _q(self, arm: str) -> np.ndarray:
        return self.sim.data.qpos[self._idx[arm].qpos_adr].copy()

    def _cycle(self, dt_s: float) -> None:
        d = self.sim.data
        targets: dict[str, np.ndarray] = {}
        for a, dev in self.devices.items():
            idx = self._idx[a]
            tau_ext = d.qfrc_constraint[idx.dof_adr]
            targets[a] = dev.step(dt_s, self._q(a), tau_ext)
            if dev.grip_target_m is not None and dev.grip_enabled:
                force = dev.grip_effort_nm * GRIPPER_N_PER_NM
                self.sim.model.actuator_forcerange[idx.finger_act_ids] = (-force, force)
                self.sim.command_gripper(a, dev.grip_target_m)
                dev.grip_target_m = None
        self.sim.servo(targets, dt_s, _FREE)

    def _publish(self, cycle: int) -> None:
        now = time.monotonic()
        for a, bus in self._buses.items():
            with self.lock:
                out = self._feedback(a, cycle % LOW_SPEED_EVERY == 0)
            if now < self._drop_until[a]:
                ids = self._drop_ids[a]
                out = [] if ids is None else [(i, b) for i, b in out if i not in ids]
            for can_id, data in out:
                try:
                    bus.send(can.Message(arbitration_id=can_id, data=data, is_extended_id=False))
                    self.frames_sent += 1
                except can.CanError:
                    pass

    def _feedback(self, arm: str, low_speed: bool) -> list[tuple[int, bytes]]:
        dev, idx, d = self.devices[arm], self._idx[arm], self.sim.data
        q = self._q(arm)
        qd = d.qvel[idx.dof_adr]
        tau = d.actuator_force[idx.act_ids] + d.qfrc_gravcomp[idx.dof_adr]
        current = effort_to_current_ma(tau)
        for j in dev.over_current:
            current[j] = OVER_CURRENT_MA
        mdeg = [int(round(float(v) * 180_000.0 / np.pi)) for v in q + self.joint_offset_rad[arm]]
        pose = self._fk.CalFK(q.tolist())[5]
        out = [
            (
                frames.STATUS,
                frames.status(
                    dev.ctrl_mode, dev.arm_status, dev.move_mode, dev.motion_done(), dev.err_code
                ),
            )
        ]
        for k in range(3):
            out.append(
                (
                    frames.END_POSE[k],
                    frames.pair_i32(round(pose[2 * k] * 1000), round(pose[2 * k + 1] * 1000)),
                )
            )
            out.append((frames.JOINT_FEEDBACK[k], frames.pair_i32(mdeg[2 * k], mdeg[2 * k + 1])))
        opening = float(d.qpos[idx.finger_qpos_adr].sum())
        grip_force = float(np.abs(d.actuator_force[idx.finger_act_ids]).mean())
        effort = min(GRIPPER_EFFORT_MAX_MNM, round(grip_force / GRIPPER_N_PER_NM * 1000))
        out.append(
            (
                frames.GRIPPER_FEEDBACK,
                frames.gripper(m_to_um(opening), effort, 0x40 if dev.grip_enabled else 0x00),
            )
        )
        for j in range(6):
            out.append(
                (
                    frames.HIGH_SPEED[j],
                    frames.high_speed(
                        round(float(qd[j]) * 1000), current[j], round(float(q[j]) * 1000)
                    ),
                )
            )
        if low_speed:
            for j in range(6):
                out.append(
                    (
                        frames.LOW_SPEED[j],
                        frames.low_speed(240, 35, 30, dev.foc_status(j), abs(current[j]) // 10),
                    )
                )
        out.extend(dev.replies)
        dev.replies.clear()
        return out

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        for bus in self._buses.values():
            bus.shutdown()
        self._render.submit(self.sim.close).result()
        self._render.shutdown()

    def __enter__(self) -> PiperEmulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["PiperEmulator"]
