"""A Backend proxy that serialises access from several executor threads.

The robot node's timers (joint states, TF, camera frames) and its motion calls run on different
threads of a multi-threaded executor; a simulator is not thread-safe and a renderer must not run
while physics steps. Every Backend method runs under one re-entrant lock, so a timer slips in
between two control ticks of a long move. :meth:`estop` deliberately does NOT take the lock: it
must act while a tick is running (backends implement it as a thread-safe latch that the current
or next ``servo`` honours), which bounds the stop latency by one control tick.

Rendering runs on one dedicated thread: an EGL/OpenGL context stays current on the thread that
first used it (MuJoCo's offscreen renderer), so ``capture`` from changing executor threads would
fail with ``EGL_BAD_ACCESS``.

The commands pass here too: each control tick and each jaw command queues what is then in force
on every arm (:meth:`drain_commands`): the joint targets the backend applied
(``TickReport.q_applied``, after its safety clipping; on a guarded stop the held position; an arm
not yet commanded in this scene holds where it stands) and the jaw targets, stamped when the
command was given. The robot node's state timer publishes them on ``/captain/joint_commands``.

The e-stop latch lives here, above the backend object: a scene load swaps the backend, a reset of
the scene restores a snapshot, and neither may release a latched e-stop; only
:meth:`reset_estop` (the operator's ``/captain/estop/reset``) does.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from captain_ros.backends.base import Backend, Kinematics
from captain_ros.core.geometry import Pose
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.types import (
    CameraFrame,
    ForceGuard,
    GripperState,
    JointState,
    RobotSpec,
    TickReport,
)

COMMAND_QUEUE = 10_000
"""Commands kept for :meth:`LockedBackend.drain_commands` (200 s of 50 Hz ticks): a bound where
nothing drains them."""


@dataclass(frozen=True)
class Command:
    """What was in force after one command: joint targets [rad] of every arm, then each arm's
    ``<arm>_jaw_opening_m`` target [m], given at ``stamp_ns`` [ns, system clock]."""

    stamp_ns: int
    names: tuple[str, ...]
    positions: tuple[float, ...]


class LockedBackend(Backend):
    """Delegates to ``inner`` with every call under ``lock`` (except :meth:`estop`)."""

    def __init__(
        self, inner: Backend, lock: threading.RLock | None = None, latched_reason: str | None = None
    ) -> None:
        self.inner = inner
        self.lock = lock or threading.RLock()
        self.latched_reason = latched_reason
        if latched_reason is not None:
            inner.estop(latched_reason)
        self._render_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="render")
        self._q_cmd: dict[str, np.ndarray] = {}  # arm -> last applied joint targets [rad]
        self._jaw_cmd: dict[str, float] = {}  # arm -> last applied jaw target [m]
        self._names: dict[str, tuple[str, ...]] = {}
        self._commands: deque[Command] = deque(maxlen=COMMAND_QUEUE)

    @property
    def spec(self) -> RobotSpec:
        return self.inner.spec

    def kinematics(self, arm: str) -> Kinematics:
        with self.lock:
            return self.inner.kinematics(arm)

    def time_s(self) -> float:
        with self.lock:
            return self.inner.time_s()

    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        with self.lock:
            return self._render_thread.submit(self.inner.capture, cameras).result()

    def joint_state(self, arm: str) -> JointState:
        with self.lock:
            return self.inner.joint_state(arm)

    def ee_pose(self, arm: str) -> Pose:
        with self.lock:
            return self.inner.ee_pose(arm)

    def gripper(self, arm: str) -> GripperState:
        with self.lock:
            return self.inner.gripper(arm)

    def contact_force_n(self, arm: str) -> float:
        with self.lock:
            return self.inner.contact_force_n(arm)

    def servo(
        self, q_targets: Mapping[str, np.ndarray], duration_s: float, guard: ForceGuard
    ) -> TickReport:
        with self.lock:
            stamp_ns = time.time_ns()
            rep = self.inner.servo(q_targets, duration_s, guard)
            self._q_cmd.update({a: np.asarray(q, float).copy() for a, q in rep.q_applied.items()})
            self._queue(stamp_ns)
            return rep

    def command_gripper(self, arm: str, opening_m: float) -> float:
        with self.lock:
            stamp_ns = time.time_ns()
            applied = self.inner.command_gripper(arm, opening_m)
            self._jaw_cmd[arm] = float(applied)
            self._queue(stamp_ns)
            return applied

    def _queue(self, stamp_ns: int) -> None:
        names: list[str] = []
        values: list[float] = []
        jaws: list[float] = []
        for arm in self.inner.spec.arm_names:
            if arm not in self._q_cmd:  # not commanded yet: its controller holds it where it is
                st = self.inner.joint_state(arm)
                self._q_cmd[arm] = np.asarray(st.position_rad, float).copy()
                self._names[arm] = tuple(st.names)
            if arm not in self._names:
                self._names[arm] = tuple(self.inner.joint_state(arm).names)
            if arm not in self._jaw_cmd:
                self._jaw_cmd[arm] = float(self.inner.gripper(arm).command_m)
            names += self._names[arm]
            values += [float(v) for v in self._q_cmd[arm]]
            jaws.append(self._jaw_cmd[arm])
        names += [f"{a}_jaw_opening_m" for a in self.inner.spec.arm_names]
        self._commands.append(Command(stamp_ns, tuple(names), tuple(values + jaws)))

    def drain_commands(self) -> list[Command]:
        """The commands queued since the last call, oldest first."""
        with self.lock:
            out = list(self._commands)
            self._commands.clear()
            return out

    def _forget_commands(self) -> None:
        self._q_cmd.clear()
        self._jaw_cmd.clear()
        self._names.clear()

    def estop(self, reason: str = "") -> None:
        self.latched_reason = reason or "operator"
        self.inner.estop(reason)  # no lock: must act during a running tick

    def reset_estop(self) -> None:
        with self.lock:
            self.inner.reset_estop()
            self.latched_reason = None

    def _relatch(self) -> None:
        if self.latched_reason is not None and not self.inner.estopped:
            self.inner.estop(self.latched_reason)

    @property
    def estopped(self) -> bool:
        return self.latched_reason is not None or self.inner.estopped

    def snapshot(self) -> Any:
        with self.lock:
            return self.inner.snapshot()

    def restore(self, snapshot: Any) -> None:
        with self.lock:
            self.inner.restore(snapshot)
            self._forget_commands()
            self._relatch()

    def privileged_state(self) -> PrivilegedState:
        with self.lock:
            return self.inner.privileged_state()

    def swap(self, new: Backend) -> None:
        """Replace the wrapped backend (new scene) and close the old one on the render thread."""
        with self.lock:
            old, self.inner = self.inner, new
            self._forget_commands()
            self._relatch()
            self._render_thread.submit(old.close).result()

    def close(self) -> None:
        with self.lock:
            self._render_thread.submit(self.inner.close).result()  # GL context freed where it lives
        self._render_thread.shutdown(wait=True)

    def __getattr__(self, name: str) -> Any:  # backend-specific extras (read-only use)
        return getattr(self.inner, name)
