"""The one backend interface that MuJoCo, the kinematic fake and hardware adapters implement.

Units are SI, poses are in the ``world`` frame (REP 103: x forward, y left, z up), quaternions are
``(w, x, y, z)``. Commands return what was actually applied after safety clipping.

The motion layer (:mod:`captain_ros.motion`) is backend-agnostic: it plans with
:meth:`Backend.kinematics` and executes one control tick at a time with :meth:`Backend.servo`,
which monitors contact force at every physics substep (or driver cycle) and halts at the first
one over the guard. Snapshots and privileged state exist in simulation only; hardware raises
:class:`~captain_ros.core.errors.NotSupportedError`.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, Generic, Protocol, Self, TypeVar

import numpy as np

from captain_ros.core.errors import NotSupportedError, UnknownNameError
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


class Kinematics(Protocol):
    """Kinematic model of one arm, evaluated without touching the live robot state."""

    joint_names: tuple[str, ...]

    def fk(self, q: np.ndarray) -> Pose:
        """Tool-centre-point pose in the world frame for joint positions ``q`` [rad]."""

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """(6, n) world-frame Jacobian of the tool point: rows ``[linear; angular]``."""

    def collisions(self, q_by_arm: Mapping[str, np.ndarray]) -> list[str]:
        """Colliding pairs (robot-self, arm-arm, robot-table/static scene) at this configuration.

        Arms not in ``q_by_arm`` stay where they are now. Returns ``[]`` when collision-free.
        Movable task objects are ignored (contact with them is handled by the force guard).
        """


class SafetyContract(abc.ABC):
    """What everything driven below the policy API shares: the :class:`Backend` of an arm rig and
    the :class:`~captain_ros.backends.humanoid.HumanoidBridge` of a humanoid pair (not a Backend:
    docs/backends.md). Commands raise :class:`~captain_ros.core.errors.EStopError` while the
    e-stop is latched; snapshots exist in simulation only."""

    @abc.abstractmethod
    def estop(self, reason: str = "") -> None:
        """Halt all motion now and latch the e-stop until :meth:`reset_estop`."""

    @abc.abstractmethod
    def reset_estop(self) -> None:
        """Release the latched e-stop; everything holds where it is (a Backend's motion targets
        are reset to the current position; a humanoid's commands are zero)."""

    @property
    @abc.abstractmethod
    def estopped(self) -> bool:
        """Whether the e-stop is latched."""

    def snapshot(self) -> Any:
        """Full restorable state (physics, controller state and targets, RNG)."""
        raise NotSupportedError(f"{type(self).__name__} has no snapshots (simulation only)")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release renderers, buses and files."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Backend(SafetyContract):
    """A robot rig (one or more arms with parallel grippers) plus its cameras."""

    # --- description -------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def spec(self) -> RobotSpec:
        """Arms, cameras, limits and geometry of this rig."""

    @abc.abstractmethod
    def kinematics(self, arm: str) -> Kinematics:
        """Kinematic model of ``arm`` for planning (IK, collision checks)."""

    # --- sensing -----------------------------------------------------------------------------
    @abc.abstractmethod
    def time_s(self) -> float:
        """Backend clock [s] (simulation time in sim)."""

    @abc.abstractmethod
    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        """RGB-D frames of the named cameras (all cameras when ``None``)."""

    @abc.abstractmethod
    def joint_state(self, arm: str) -> JointState:
        """Measured joint state of ``arm``."""

    @abc.abstractmethod
    def ee_pose(self, arm: str) -> Pose:
        """Measured tool-centre-point pose of ``arm`` (between the pads) in the world frame."""

    @abc.abstractmethod
    def gripper(self, arm: str) -> GripperState:
        """Measured gripper state of ``arm``."""

    @abc.abstractmethod
    def contact_force_n(self, arm: str) -> float:
        """Current magnitude of the external contact force on ``arm`` and its gripper [N]."""

    # --- commanding --------------------------------------------------------------------------
    @abc.abstractmethod
    def servo(
        self, q_targets: Mapping[str, np.ndarray], duration_s: float, guard: ForceGuard
    ) -> TickReport:
        """Track joint targets for one control tick of ``duration_s`` [s].

        Targets are clipped to joint limits and velocity limits. Force is checked at every
        substep; at the first substep over the guard the arm holds its current position and the
        report says ``stopped``. Arms not in ``q_targets`` hold their targets. Raises
        :class:`~captain_ros.core.errors.EStopError` while the e-stop is latched.
        """

    @abc.abstractmethod
    def command_gripper(self, arm: str, opening_m: float) -> float:
        """Set the jaw opening target [m]; returns the clipped target actually applied.

        The jaw moves while the backend is stepped (``servo``); it stops on the object it grasps.
        """

    # --- safety (estop, reset_estop, estopped: SafetyContract) -----------------------------------
    # --- simulation only (snapshot: SafetyContract) -------------------------------------------
    def restore(self, snapshot: Any) -> None:
        """Restore a :meth:`snapshot` exactly (bit-identical replay afterwards)."""
        raise NotSupportedError(f"{type(self).__name__} has no snapshots (simulation only)")

    def privileged_state(self) -> PrivilegedState:
        """Simulator ground truth (object poses, articulation, contacts). Never for policies."""
        raise NotSupportedError(f"{type(self).__name__} has no privileged state (simulation only)")


K = TypeVar("K", bound=Kinematics)


class ArmTable(Generic[K]):
    """The accessors of a backend that keeps its arms in a table (the MuJoCo and robosuite
    backends): ``_spec``, ``_arms`` (arm name -> its model indices) and ``_kin`` (arm name -> its
    :class:`Kinematics`), set by the backend. Listed first among the bases::

        class MujocoBackend(ArmTable[MujocoKinematics], Backend): ...
    """

    _spec: RobotSpec
    _arms: Mapping[str, Any]
    _kin: Mapping[str, K]

    @property
    def spec(self) -> RobotSpec:
        return self._spec

    def _arm(self, arm: str) -> Any:
        """The indices of ``arm`` (an unknown name: :class:`UnknownNameError` listing the arms)."""
        if arm not in self._arms:
            raise UnknownNameError("arm", arm, list(self._arms))
        return self._arms[arm]

    def kinematics(self, arm: str) -> K:
        self._arm(arm)
        return self._kin[arm]
