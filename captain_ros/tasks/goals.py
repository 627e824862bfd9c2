"""Goals: the physical conditions a task's success predicate is the conjunction of.

A task lists its goals in order (the "active goal" of the critic features is the first one not yet
satisfied). Each goal knows its target body, its destination (a body or ``None``), whether it
involves an articulated joint or a contact, when it is satisfied, and how far the target still
is from it. All lengths in metres, angles in radians; everything is read from the privileged state
from the typed :class:`~captain_ros.core.privileged.PrivilegedState`.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from captain_ros.core.privileged import PrivilegedState


@dataclass(frozen=True)
class Goal(abc.ABC):
    """One goal. ``target``: the body that must be moved; ``destination``: where (or ``None``)."""

    name: str
    target: str
    destination: str | None

    involves_joint = False
    involves_contact = True

    @abc.abstractmethod
    def satisfied(self, state: PrivilegedState) -> bool:
        """Whether the goal holds in ``state``."""

    @abc.abstractmethod
    def residual(self, state: PrivilegedState) -> float:
        """Remaining distance of the target to the goal [m] (0 when satisfied geometrically)."""

    def goal_point_m(self, state: PrivilegedState) -> np.ndarray:
        """Where the target should end up [m] (its current position for non-placement goals)."""
        return state.object(self.target).position_m


@dataclass(frozen=True)
class PlaceOn(Goal):
    """``target`` rests on top of ``destination``, centred within ``tol_xy_m``, released.

    Attributes:
        target_half_height_m: Half height of the target (body origin at its centre) [m].
        support_top_offset_m: Height of the destination's top surface above its body origin [m].
        tol_xy_m: Maximum horizontal distance between the two centres [m].
        tol_z_m: Maximum gap/penetration between target bottom and support top [m].
        max_tilt_rad: Maximum tilt of the target [rad].
        any_face_down: The target may rest on any face (a cube); tilt is then measured from the
            nearest face normal (see :meth:`~captain_ros.core.privileged.ObjectTruth.tilt_rad`).
    """

    target_half_height_m: float = 0.0175
    support_top_offset_m: float = 0.0
    tol_xy_m: float = 0.03
    tol_z_m: float = 0.012
    max_tilt_rad: float = float(np.deg2rad(20.0))
    any_face_down: bool = False

    def goal_point_m(self, state: PrivilegedState) -> np.ndarray:
        assert self.destination is not None
        d = state.object(self.destination).position_m
        return np.array([d[0], d[1], d[2] + self.support_top_offset_m + self.target_half_height_m])

    def offsets(self, state: PrivilegedState) -> tuple[float, float]:
        """(horizontal distance [m], signed bottom-to-support-top gap [m])."""
        p = state.object(self.target).position_m
        g = self.goal_point_m(state)
        return float(np.linalg.norm(p[:2] - g[:2])), float(p[2] - g[2])

    def placed(self, state: PrivilegedState) -> bool:
        """Geometrically on the support (held or not)."""
        dxy, dz = self.offsets(state)
        return (
            dxy <= self.tol_xy_m
            and abs(dz) <= self.tol_z_m
            and state.object(self.target).tilt_rad(self.any_face_down) <= self.max_tilt_rad
        )

    def satisfied(self, state: PrivilegedState) -> bool:
        return bool(self.placed(state) and not state.object(self.target).held)

    def residual(self, state: PrivilegedState) -> float:
        return float(
            np.linalg.norm(state.object(self.target).position_m - self.goal_point_m(state))
        )


@dataclass(frozen=True)
class RestOnTable(Goal):
    """``target`` lies on the table (not on another object), released and upright within tilt."""

    table_top_z_m: float = 0.0
    target_half_height_m: float = 0.0175
    tol_z_m: float = 0.012
    max_tilt_rad: float = float(np.deg2rad(20.0))
    any_face_down: bool = False

    def satisfied(self, state: PrivilegedState) -> bool:
        p = state.object(self.target).position_m
        return bool(
            abs(p[2] - self.target_half_height_m - self.table_top_z_m) <= self.tol_z_m
            and state.object(self.target).tilt_rad(self.any_face_down) <= self.max_tilt_rad
            and not state.object(self.target).held
        )

    def residual(self, state: PrivilegedState) -> float:
        p = state.object(self.target).position_m
        return float(
            max(0.0, abs(p[2] - self.target_half_height_m - self.table_top_z_m) - self.tol_z_m)
        )


@dataclass(frozen=True)
class JointAtLeast(Goal):
    """Articulated ``joint`` opened to at least ``open_m`` (``target`` = the handle body).

    A state that does not report the joint (no articulation physics) counts as closed (0).
    """

    joint: str = ""
    open_m: float = 0.1
    involves_joint = True
    involves_contact = False

    def satisfied(self, state: PrivilegedState) -> bool:
        return bool(state.joint(self.joint, 0.0) >= self.open_m)

    def residual(self, state: PrivilegedState) -> float:
        return float(max(0.0, self.open_m - state.joint(self.joint, 0.0)))


@dataclass(frozen=True)
class LiftedBy(Goal):
    """``target``'s bottom is ``lift_m`` above the table, level within tilt, held by ``n_arms`` arms."""

    table_top_z_m: float = 0.0
    target_half_height_m: float = 0.02
    lift_m: float = 0.1
    max_tilt_rad: float = float(np.deg2rad(15.0))
    n_arms: int = 2

    def lift_m_of(self, state: PrivilegedState) -> float:
        """Height of the target's bottom above the table [m]."""
        return float(
            state.object(self.target).position_m[2] - self.target_half_height_m - self.table_top_z_m
        )

    def satisfied(self, state: PrivilegedState) -> bool:
        holders = sum(state.object(self.target).held_by_arm(a) for a in state.arm_names)
        return bool(
            self.lift_m_of(state) >= self.lift_m
            and holders >= self.n_arms
            and state.object(self.target).tilt_rad() <= self.max_tilt_rad
        )

    def residual(self, state: PrivilegedState) -> float:
        return float(max(0.0, self.lift_m - self.lift_m_of(state)))

    def goal_point_m(self, state: PrivilegedState) -> np.ndarray:
        p = state.object(self.target).position_m.copy()
        p[2] = self.table_top_z_m + self.target_half_height_m + self.lift_m
        return p


@dataclass(frozen=True)
class InsertedInto(Goal):
    """Peg ``target`` stands in the hole of ``destination`` at least ``depth_m`` deep.

    Attributes:
        target_half_height_m: Half height of the peg [m].
        hole_top_offset_m: Height of the block's top above its body origin [m].
        tol_xy_m: Maximum horizontal distance between peg axis and hole axis [m].
        depth_m: Minimum depth of the peg bottom below the block top [m].
        max_tilt_rad: Maximum tilt of the peg [rad].
    """

    target_half_height_m: float = 0.045
    hole_top_offset_m: float = 0.0
    tol_xy_m: float = 0.008
    depth_m: float = 0.02
    max_tilt_rad: float = float(np.deg2rad(12.0))

    def goal_point_m(self, state: PrivilegedState) -> np.ndarray:
        assert self.destination is not None
        d = state.object(self.destination).position_m
        top = d[2] + self.hole_top_offset_m
        return np.array([d[0], d[1], top - self.depth_m + self.target_half_height_m])

    def depth_of(self, state: PrivilegedState) -> float:
        """How far the peg bottom is below the block top [m] (negative: above it)."""
        assert self.destination is not None
        top = state.object(self.destination).position_m[2] + self.hole_top_offset_m
        return float(top - (state.object(self.target).position_m[2] - self.target_half_height_m))

    def xy_error_m(self, state: PrivilegedState) -> float:
        assert self.destination is not None
        p = state.object(self.target).position_m
        d = state.object(self.destination).position_m
        return float(np.linalg.norm(p[:2] - d[:2]))

    def satisfied(self, state: PrivilegedState) -> bool:
        return bool(
            self.xy_error_m(state) <= self.tol_xy_m
            and self.depth_of(state) >= self.depth_m
            and state.object(self.target).tilt_rad() <= self.max_tilt_rad
        )

    def residual(self, state: PrivilegedState) -> float:
        return float(
            np.hypot(self.xy_error_m(state), max(0.0, self.depth_m - self.depth_of(state)))
        )
