"""robosuite's Door and NutAssemblySquare: a hinged door and a peg fixed to the table.

As for :mod:`captain_ros.tasks.robosuite_tasks`, the scene, the placement and its randomisation are
robosuite's, and host success is robosuite's own ``_check_success()``:

- ``Door``: the door's hinge (``Door_hinge``, 0-0.4 rad) past 0.3 rad. The door is latched:
  robosuite's lever handle (``Door_latch_joint``, a spring) must be turned about 1.3 rad before
  the latch clears the frame.
- ``NutAssemblySquare``: the square nut's centre within 3 cm (each of x and y) of the square peg's
  axis and less than 5 cm above the table, and the gripper more than about 4.2 cm from the nut
  (robosuite's ``1 - tanh(10 d) < 0.6``: let go and back off).

World frame: the robosuite backend's table-top frame (robosuite's world lowered by the table
height, 0.8 m for Door, 0.82 m for NutAssembly).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.core.privileged import PrivilegedState
from captain_ros.tasks import gate
from captain_ros.tasks.base import cm, deg
from captain_ros.tasks.goals import Goal, JointAtLeast, PlaceOn
from captain_ros.tasks.robosuite_tasks import TABLE_TOP_Z_M, RobosuiteTask

HANDLE = (("handle", "lever", "knob"),)
NUT = (("nut", "ring"),)
PEG = (("peg", "post", "pin"),)
REACH_M = 0.05


def _near(state: PrivilegedState, obj: str, reach_m: float = REACH_M) -> bool:
    p = state.object(obj).position_m
    return any(
        float(np.linalg.norm(state.arm(a).tcp_position_m - p)) <= reach_m for a in state.arm_names
    )


class RobosuiteDoor(RobosuiteTask):
    """robosuite Door: turn the lever handle and pull the latched door open past 0.3 rad."""

    name = "robosuite_door"
    env_name = "Door"
    objects = {"door": "Door_door", "handle": "Door_latch"}
    templates = (
        "open the door",
        "turn the door handle and pull the door open",
        "unlatch the door with its handle and swing it open",
    )
    tolerances = {"open_rad": 0.3, "gate_moved_m": 0.09}
    milestone_names = ("reached", "handle_turned", "opened_third", "opened")
    persistent_milestones = frozenset({"opened"})
    HINGE = "Door_hinge"
    LATCH = "Door_latch_joint"
    UNLATCHED_RAD = 1.2
    """The lever angle from which the latch lets the door swing (measured: 1.2 rad frees part of
    the travel, 1.5 rad all of it)."""

    @property
    def goals(self) -> tuple[Goal, ...]:
        return (
            JointAtLeast("door_open", "handle", None, joint=self.HINGE,
                         open_m=self.tolerances["open_rad"]),
        )  # fmt: skip

    def milestones(self, state: PrivilegedState) -> list[bool]:
        hinge = state.joint(self.HINGE, 0.0)
        turned = abs(state.joint(self.LATCH, 0.0)) >= self.UNLATCHED_RAD
        return [
            _near(state, "handle", 0.08),
            turned or hinge >= 0.05,
            hinge >= self.tolerances["open_rad"] / 3,
            self.success(state),
        ]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        first, last = gate.first(measurements, HANDLE), gate.latest(measurements, HANDLE)
        if first is None or last is None or first is last:
            return False, (
                "measure the door handle with measure_object_geometry before you turn it and "
                "again once the door is open, so the opening can be checked"
            )
        a, b = np.asarray(first["center_m"][:2]), np.asarray(last["center_m"][:2])
        moved = float(np.linalg.norm(b - a))
        need = self.tolerances["gate_moved_m"]
        if moved < need:
            return False, (
                f"the handle moved {moved * 100:.1f} cm between your first and latest "
                f"measurements; the door must swing open until it has moved at least {cm(need)}"
            )
        return True, f"the handle moved {moved * 100:.1f} cm: the door is open"

    def standard(self) -> list[str]:
        t = self.tolerances
        return [
            f"robosuite's own check: the door's hinge is open more than {deg(t['open_rad'])} "
            "(of 23 deg travel). The door is latched until its lever handle is turned most of "
            "the way down (or up).",
            f"`finish()` needs two measurements of the handle (one before turning it, the latest "
            f"with the door open) at least {cm(t['gate_moved_m'])} apart horizontally.",
        ]


class RobosuiteNutAssemblySquare(RobosuiteTask):
    """robosuite NutAssemblySquare: the square nut dropped over the square peg."""

    name = "robosuite_nut_assembly_square"
    env_name = "NutAssemblySquare"
    objects = {"square_nut": "SquareNut_main", "square_peg": "peg1"}
    templates = (
        "put the square nut on the square peg",
        "fit the square nut over the square peg",
        "pick up the nut by its handle and drop it around the square peg",
    )
    tolerances = {"xy_m": 0.03, "z_m": 0.05, "gate_xy_m": 0.02, "clear_m": 0.043}
    milestone_names = ("grasped", "lifted", "over_peg", "placed")
    persistent_milestones = frozenset({"placed"})
    NUT_HALF_HEIGHT_M = 0.01
    PEG_HALF_HEIGHT_M = 0.1

    @property
    def goals(self) -> tuple[Goal, ...]:
        t = self.tolerances
        # the peg's body is at its middle; the nut rests on the table around it
        return (
            PlaceOn(
                "nut_on_peg",
                "square_nut",
                "square_peg",
                target_half_height_m=self.NUT_HALF_HEIGHT_M,
                support_top_offset_m=-self.PEG_HALF_HEIGHT_M + 0.07,
                tol_xy_m=t["xy_m"],
                tol_z_m=t["z_m"] - 2 * self.NUT_HALF_HEIGHT_M,
                max_tilt_rad=float(np.deg2rad(30.0)),
            ),
        )

    def milestones(self, state: PrivilegedState) -> list[bool]:
        nut, peg = state.object("square_nut"), state.object("square_peg")
        off = np.abs(nut.position_m[:2] - peg.position_m[:2])
        over = bool(np.all(off < self.tolerances["xy_m"]))
        return [
            nut.held or nut.ever_held,
            nut.held and nut.position_m[2] > TABLE_TOP_Z_M + 0.05,
            over,
            self.success(state),
        ]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        rec = gate.latest(measurements, NUT, PEG)
        if rec is None:
            return False, (
                "measure the square nut with the square peg as destination on a fresh "
                "observation after letting go"
            )
        dist = float(rec["destination"].get("distance_xy_m", float("inf")))
        need = self.tolerances["gate_xy_m"]
        if dist > need:
            return False, (
                f"the nut's centre is {dist * 100:.1f} cm from the peg's axis (at most {cm(need)})"
            )
        bottom = gate.bottom_z_m(rec) - TABLE_TOP_Z_M
        if bottom > self.tolerances["z_m"] - 2 * self.NUT_HALF_HEIGHT_M:
            return False, f"the nut's bottom is {bottom * 100:.1f} cm up: it is not down the peg"
        if rec.get("held"):
            return False, "the latest measurement says the nut is still held: let go first"
        return True, f"the nut is around the peg ({dist * 100:.1f} cm from its axis)"

    def standard(self) -> list[str]:
        t = self.tolerances
        return [
            f"robosuite's own check: the nut's centre within {cm(t['xy_m'])} of the square peg's "
            f"axis along x and along y, less than {cm(t['z_m'])} above the table, and the "
            f"gripper more than about {cm(t['clear_m'])} from the nut.",
            f"`finish()` needs your latest measurement of the nut against the peg: its centre "
            f"within {cm(t['gate_xy_m'])} of the peg's, its bottom near the table, not held.",
        ]
