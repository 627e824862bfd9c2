"""The humanoid bridge: the backend interface of a pair of humanoids that share a payload.

It is not a :class:`captain_ros.backends.base.Backend` (docs/backends.md says why) but shares its
:class:`~captain_ros.backends.base.SafetyContract` and is shaped like it (a ``spec``, measured state, commands
that return what was applied after clipping, a latched e-stop, snapshots and privileged state in
simulation only) but speaks what a humanoid's whole-body/locomotion controller accepts instead of
arm joint servoing: planar body-frame base velocities with a watchdog, pelvis height targets, and
arm posture targets for the payload-support adapter. A real pair implements it by forwarding to
its controllers (for example a locomotion policy's velocity command and an arm PD adapter) and by
letting wall-clock time pass in :meth:`advance`; :class:`~captain_ros.backends.humanoid.sim.MujocoHumanoidPair`
implements it in MuJoCo, and :mod:`captain_ros.ros.humanoid_client` implements it over ROS.

Safety lives below this interface: commands are clipped to the controller limits, velocity commands
expire (watchdog), a fallen robot's controllers hold, and the e-stop halts every robot until an
explicit :meth:`reset_estop`. Commands raise :class:`~captain_ros.core.errors.EStopError` while the
e-stop is latched.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from captain_ros.backends.base import SafetyContract
from captain_ros.backends.humanoid.types import (
    AdvanceReport,
    BaseVelocity,
    HumanoidState,
    PairSpec,
)
from captain_ros.core.errors import NotSupportedError


class HumanoidBridge(SafetyContract):
    """Two humanoids (``spec.robot_names``) and the controllers that move them.

    The e-stop, ``snapshot`` and ``close`` are :class:`~captain_ros.backends.base.SafetyContract`'s,
    as on a Backend: :meth:`reset_estop` leaves zero velocity commands and the arm targets at the
    measured posture; a snapshot's ``digest`` attribute is the state digest at that instant
    (taken atomically with the snapshot).
    """

    # --- description -------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def spec(self) -> PairSpec:
        """Robots, limits and control rates."""

    # --- sensing -----------------------------------------------------------------------------
    @abc.abstractmethod
    def time_s(self) -> float:
        """Bridge clock [s] (simulation time in sim)."""

    @abc.abstractmethod
    def state(self, robot: str) -> HumanoidState:
        """Measured state of ``robot`` (base pose from localisation, joints, palm forces)."""

    # --- commanding --------------------------------------------------------------------------
    @abc.abstractmethod
    def command_velocity(self, robot: str, velocity: BaseVelocity) -> BaseVelocity:
        """Planar body-frame velocity for the locomotion controller; returns the clipped command.

        The command holds until replaced or until the watchdog (``command_timeout_s``) expires it.
        """

    @abc.abstractmethod
    def command_height(self, robot: str, offset_m: float) -> float:
        """Pelvis height offset target relative to nominal [m]; returns the clipped target."""

    @abc.abstractmethod
    def command_arms(self, robot: str, q_rad: np.ndarray, ramp_s: float) -> np.ndarray:
        """Ramp the 14 arm PD targets to ``q_rad`` over ``ramp_s`` [s]; returns the clipped goal."""

    @abc.abstractmethod
    def advance(self, duration_s: float) -> AdvanceReport:
        """Let the controllers run for ``duration_s`` [s] (simulation: step; hardware: wait and
        monitor). Stops early when the e-stop latches or a robot falls."""

    # --- safety and simulation only (estop, reset_estop, estopped, snapshot: SafetyContract) ---
    def restore(self, snapshot: Any) -> str:
        """Restore a :meth:`snapshot` exactly (bit-identical replay afterwards); returns the state
        digest right after restoring (atomically), for the caller to verify the restoration."""
        raise NotSupportedError(f"{type(self).__name__} has no snapshots (simulation only)")

    def privileged_state(self) -> dict[str, Any]:
        """Simulator ground truth (payload pose, contacts, monitor extrema, state digest)."""
        raise NotSupportedError(f"{type(self).__name__} has no privileged state (simulation only)")

    def reset_monitor(self) -> None:
        """Start a new window of the extrema reported in ``privileged_state()["monitor"]``."""
        raise NotSupportedError(
            f"{type(self).__name__} has no privileged monitor (simulation only)"
        )
