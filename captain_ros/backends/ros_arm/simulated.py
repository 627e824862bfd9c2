"""A simulated ros2_control arm: MuJoCo physics behind a joint-trajectory controller, real time.

What :mod:`captain_ros.ros.arm_bridge.driver_node` exposes over ROS, the way a ros2_control
driver with ``joint_trajectory_controller`` and a gripper controller would. ROS-free, like the
PiPER CAN emulator. Every 5 ms cycle each arm's controller samples its active trajectory (linear
interpolation from the setpoint at acceptance through the points, as JTC does for position-only
points), the MuJoCo rig follows those setpoints with its position actuators, and the measured
state is what ``/joint_states`` reports: positions, velocities and efforts (actuator torque plus
gravity compensation = the motor torque; N for the fingers). A new trajectory preempts the active
one and starts from the current setpoint; cancel holds the measured position. Faults for tests:
frozen joint states, an external push on a link.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.backends.mujoco import model as rigmodel
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.core.types import CameraFrame, ForceGuard, Pose

CYCLE_S = 0.005
"""Controller cycle [s] (200 Hz)."""
_FREE = ForceGuard(stop_force_n=1e9, emergency_force_n=1e9)


@dataclass
class _Trajectory:
    token: int
    start_s: float
    q0: np.ndarray
    times_s: np.ndarray  # (k,) time_from_start of each point
    points: np.ndarray  # (k, n)

    def sample(self, now_s: float) -> tuple[np.ndarray, bool]:
        t = now_s - self.start_s
        if t >= self.times_s[-1]:
            return self.points[-1].copy(), True
        i = int(np.searchsorted(self.times_s, t, side="right"))
        t_a = 0.0 if i == 0 else float(self.times_s[i - 1])
        q_a = self.q0 if i == 0 else self.points[i - 1]
        w = (t - t_a) / max(1e-9, float(self.times_s[i]) - t_a)
        return q_a + w * (self.points[i] - q_a), False


class SimulatedArmDriver:
    """The PiPER MuJoCo rig (``scene``) behind per-arm trajectory controllers and grippers.

    Joint names are the model's (``joint1..6``, ``finger_left/right``; ``left_``/``right_``
    prefixes on the dual rig).
    """

    def __init__(
        self, scene: SceneSpec | None = None, rig: str = "piper", image_size_px: int = 256
    ) -> None:
        self.sim = MujocoBackend(scene, rig=rig, image_size_px=image_size_px)
        m = self.sim.model
        self.arms = {
            a: rigmodel.index_arm(m, a, p) for a, p in rigmodel.ARM_PREFIXES[self.sim.rig].items()
        }
        self._finger_dof = {
            a: np.array([m.jnt_dofadr[m.joint(n).id] for n in self.finger_names(a)])
            for a in self.arms
        }
        self.lock = threading.RLock()
        self._traj: dict[str, _Trajectory | None] = dict.fromkeys(self.arms)
        self._setpoint = {a: self._q(a) for a in self.arms}
        self._status: dict[int, str] = {}
        self._tokens = 0
        self.frozen_until_s = 0.0
        self._frozen: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._render = ThreadPoolExecutor(max_workers=1, thread_name_prefix="driver-render")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="arm-driver", daemon=True)
        self._thread.start()

    # --- description ----------------------------------------------------------------------------
    def joint_names(self, arm: str) -> tuple[str, ...]:
        return self.arms[arm].joint_names

    def finger_names(self, arm: str) -> tuple[str, ...]:
        p = self.arms[arm].prefix
        return (f"{p}finger_left", f"{p}finger_right")

    def limits(self, arm: str) -> tuple[np.ndarray, np.ndarray]:
        a = self.arms[arm]
        return a.lower_rad, a.upper_rad

    def _q(self, arm: str) -> np.ndarray:
        return self.sim.data.qpos[self.arms[arm].qpos_adr].copy()

    # --- trajectory controller ------------------------------------------------------------------
    def follow(self, arm: str, times_s: Sequence[float], points: np.ndarray) -> int:
        """Start a trajectory (preempting the active one) from the current setpoint; its token."""
        with self.lock:
            old = self._traj[arm]
            if old is not None and self._status.get(old.token) == "active":
                self._status[old.token] = "preempted"
            self._tokens += 1
            tok = self._tokens
            self._traj[arm] = _Trajectory(
                tok,
                time.monotonic(),
                self._setpoint[arm].copy(),
                np.asarray(times_s, dtype=float),
                np.asarray(points, dtype=float),
            )
            self._status[tok] = "active"
            while len(self._status) > 256:
                self._status.pop(next(iter(self._status)))
            return tok

    def status(self, token: int) -> str:
        """``active`` | ``succeeded`` | ``preempted`` | ``canceled``."""
        with self.lock:
            return self._status.get(token, "succeeded")

    def cancel(self, arm: str, token: int | None = None) -> None:
        """Stop the trajectory (``token``, or any) and hold the measured position."""
        with self.lock:
            tr = self._traj[arm]
            if tr is not None and (token is None or tr.token == token):
                if self._status.get(tr.token) == "active":
                    self._status[tr.token] = "canceled"
                self._traj[arm] = None
                self._setpoint[arm] = self._q(arm)

    def command_gripper(self, arm: str, opening_m: float, max_effort_n: float) -> None:
        """Jaw opening target [m] with a finger force limit [N]."""
        with self.lock:
            a = self.arms[arm]
            force = float(np.clip(max_effort_n, 0.5, 40.0))
            self.sim.model.actuator_forcerange[a.finger_act_ids] = (-force, force)
            self.sim.command_gripper(arm, opening_m)

    def opening_m(self, arm: str) -> float:
        with self.lock:
            return float(self.sim.data.qpos[self.arms[arm].finger_qpos_adr].sum())

    # --- measured state -------------------------------------------------------------------------
    def joint_states(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Names, positions, velocities, efforts of every arm and finger joint."""
        with self.lock:
            if self._frozen is not None and time.monotonic() < self.frozen_until_s:
                names = [
                    n for a in self.arms for n in (*self.joint_names(a), *self.finger_names(a))
                ]
                return (names, *self._frozen)
            d = self.sim.data
            names, pos, vel, eff = [], [], [], []
            for arm, a in self.arms.items():
                names += [*a.joint_names, *self.finger_names(arm)]
                pos += [*d.qpos[a.qpos_adr], *d.qpos[a.finger_qpos_adr]]
                vel += [*d.qvel[a.dof_adr], *d.qvel[self._finger_dof[arm]]]
                eff += [
                    *(d.actuator_force[a.act_ids] + d.qfrc_gravcomp[a.dof_adr]),
                    *d.actuator_force[a.finger_act_ids],
                ]
            state = (np.array(pos), np.array(vel), np.array(eff))
            self._frozen = state
            return (names, *state)

    def freeze_joint_states(self, duration_s: float) -> None:
        """Fault: report the same joint state for ``duration_s`` [s] (a hung driver)."""
        with self.lock:
            self.joint_states()
            self.frozen_until_s = time.monotonic() + duration_s

    def push(self, body: str, force_n: Sequence[float]) -> None:
        """Fault: a constant external force [N, world] on ``body`` (``[0, 0, 0]`` removes it)."""
        with self.lock:
            self.sim.data.xfrc_applied[self.sim.model.body(body).id, :3] = np.asarray(force_n)

    def privileged_state(self) -> PrivilegedState:
        with self.lock:
            return self.sim.privileged_state()

    def render(self, camera: str) -> CameraFrame:
        """One frame of ``camera``; only the state copy is taken under the loop's lock, so
        ``/joint_states`` and the controllers keep their rates while it renders."""

        def grab() -> CameraFrame:
            with self.lock:
                state = self.sim.state_copy()
            return self.sim.capture([camera], state=state)[camera]

        return self._render.submit(grab).result()

    def tcp_pose(self, arm: str) -> Pose:
        """The simulated rig's tool pose (ground truth), read under the loop's lock: the pose
        runs ``mj_forward`` on the shared data, which must not race the stepping thread."""
        with self.lock:
            return self.sim.ee_pose(arm)

    def body_matrix(self, body: str) -> np.ndarray:
        """World 4x4 pose of a body of the simulated rig."""
        with self.lock:
            d, b = self.sim.data, self.sim.model.body(body).id
            t = np.eye(4)
            t[:3, :3] = d.xmat[b].reshape(3, 3)
            t[:3, 3] = d.xpos[b]
            return t

    # --- real-time loop -------------------------------------------------------------------------
    def _run(self) -> None:
        dt = self.sim.model.opt.timestep
        t0 = time.monotonic()
        done = 0
        while not self._stop.is_set():
            want = int((time.monotonic() - t0) / dt)
            if want - done > 25:  # after a stall (render), catch up at most 50 ms
                done = want - 25
            n = want - done
            if n > 0:
                with self.lock:
                    self._cycle(n * dt)
                done += n
            self._stop.wait(max(0.0, min(CYCLE_S, t0 + (done * dt) + CYCLE_S - time.monotonic())))

    def _cycle(self, dt_s: float) -> None:
        now = time.monotonic()
        targets = {}
        for arm in self.arms:
            tr = self._traj[arm]
            if tr is not None:
                q, finished = tr.sample(now)
                self._setpoint[arm] = q
                if finished:
                    if self._status.get(tr.token) == "active":
                        self._status[tr.token] = "succeeded"
                    self._traj[arm] = None
            targets[arm] = self._setpoint[arm]
        self.sim.servo(targets, dt_s, _FREE)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._render.submit(self.sim.close).result()
        self._render.shutdown()


__all__ = ["SimulatedArmDriver"]
