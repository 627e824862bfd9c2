"""robosuite's own tasks as :class:`~captain_ros.tasks.base.Task` adapters (``--backend robosuite``).

The scene, the object placement and its randomisation are robosuite's (``robosuite.make`` seeded
from the episode seed); host success is robosuite's own ``_check_success()``, carried in the
privileged state as ``checks["robosuite_success"]`` by the robosuite backend. What this module adds
is what our harness needs around it: the instruction, the success standard of TASK.md in words,
milestones and goals for the critic's features, and the completion gate over the agent's own
measurements. Train seeds 0-999 and held-out seeds 1000-1999, as for our tasks.

World frame: the robosuite backend's (robosuite's world lowered by the table height, so the table
top is z = 0 as on our rigs; the Panda's base at (-0.56, 0, 0.112) m facing +x).

Task names are unique (``robosuite_lift``); under ``--backend robosuite`` the short names
(``lift``) resolve to them (:func:`captain_ros.tasks.robosuite_suite.robosuite_task`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.backends.robosuite.scene import RobosuiteScene
from captain_ros.core.privileged import PrivilegedState
from captain_ros.tasks import gate
from captain_ros.tasks.base import Task, cm
from captain_ros.tasks.goals import Goal, LiftedBy, PlaceOn
from captain_ros.tasks.workspace import Workspace

HOST_CHECK = "robosuite_success"
TABLE_TOP_Z_M = 0.0
PANDA_BASE = (-0.56, 0.0, 0.0)
ROBOSUITE_WS = Workspace(
    rig="robosuite",
    table_top_z_m=TABLE_TOP_Z_M,
    arm_bases={"arm": PANDA_BASE},
    reach_min_m=0.30,
    reach_max_m=0.80,
    bearing_rad=float(np.deg2rad(60.0)),
)
CUBE = (("cube", "block", "box"),)
RED_CUBE = (("red",), ("cube", "block", "box"))
GREEN_CUBE = (("green",), ("cube", "block", "box"))


class RobosuiteTask(Task):
    """A robosuite environment judged by its own ``_check_success()``."""

    rig = "robosuite"
    env_name = ""
    robots: tuple[str, ...] = ("Panda",)
    objects: Mapping[str, str] = {}
    templates: tuple[str, ...] = ()

    @property
    def workspace(self) -> Workspace:
        return ROBOSUITE_WS

    def sample(self, seed: int) -> RobosuiteScene:
        self.rng(seed)  # validates the seed
        return RobosuiteScene(
            env_name=self.env_name, robots=self.robots, objects=dict(self.objects), seed=int(seed)
        )

    def instruction(self, seed: int) -> str:
        return self.templates[int(self.rng(seed, 2).integers(len(self.templates)))]

    def success(self, state: PrivilegedState) -> bool:
        """robosuite's own ``_check_success()`` (reported by the robosuite backend)."""
        return bool(state.checks.get(HOST_CHECK, False))


class RobosuiteLift(RobosuiteTask):
    """robosuite Lift: lift the red cube (robosuite: cube centre > table top + 4 cm)."""

    name = "robosuite_lift"
    env_name = "Lift"
    objects = {"red_cube": "cube_main"}
    templates = (
        "lift the red cube",
        "pick up the red cube and hold it up",
        "grasp the red block and lift it off the table",
        "raise the red cube above the table",
    )
    tolerances = {"lift_m": 0.04, "gate_lift_m": 0.05}
    milestone_names = ("grasped", "lifted_half", "lifted")
    persistent_milestones = frozenset({"lifted"})

    @property
    def goals(self) -> tuple[Goal, ...]:
        # centre 4 cm above the table = bottom 2 cm above it for robosuite's ~2 cm half-size cube
        return (
            LiftedBy(
                "cube_lifted",
                "red_cube",
                None,
                table_top_z_m=TABLE_TOP_Z_M,
                target_half_height_m=0.02,
                lift_m=0.02,
                max_tilt_rad=float(np.pi),
                n_arms=1,
            ),
        )

    def milestones(self, state: PrivilegedState) -> list[bool]:
        cube = state.object("red_cube")
        rise = float(cube.position_m[2] - TABLE_TOP_Z_M)
        return [cube.held, cube.held and rise >= 0.03, self.success(state)]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        rec = gate.latest(measurements, CUBE)
        if rec is None:
            return False, "measure the red cube with measure_object_geometry while you hold it up"
        centre = float(rec.get("center_m", [0.0, 0.0, 0.0])[2]) - TABLE_TOP_Z_M
        need = self.tolerances["gate_lift_m"]
        if centre < need:
            return False, (
                f"your latest measurement puts the cube's centre {centre * 100:.1f} cm above "
                f"the table; lift it until its centre is at least {cm(need)} above it"
            )
        return True, f"the cube's centre is {centre * 100:.1f} cm above the table"

    def standard(self) -> list[str]:
        return [
            f"robosuite's own check: the red cube's centre is more than {cm(self.tolerances['lift_m'])} "
            "above the table top.",
            f"`finish()` needs your latest measurement of the cube to put its centre at least "
            f"{cm(self.tolerances['gate_lift_m'])} above the table. Keep holding it.",
        ]


class RobosuiteStack(RobosuiteTask):
    """robosuite Stack: the red cube (cubeA) on the green cube (cubeB), released."""

    name = "robosuite_stack"
    env_name = "Stack"
    objects = {"red_cube": "cubeA_main", "green_cube": "cubeB_main"}
    templates = (
        "stack the red cube on the green cube",
        "put the red block on top of the green block",
        "place the red cube onto the green one",
    )
    tolerances = {"xy_m": 0.025, "z_m": 0.012}
    milestone_names = ("grasped", "lifted", "placed", "released")
    persistent_milestones = frozenset({"placed", "released"})

    @property
    def goals(self) -> tuple[Goal, ...]:
        t = self.tolerances
        return (
            PlaceOn(
                "red_on_green",
                "red_cube",
                "green_cube",
                target_half_height_m=0.02,
                support_top_offset_m=0.025,
                tol_xy_m=t["xy_m"],
                tol_z_m=t["z_m"],
                max_tilt_rad=float(np.deg2rad(20.0)),
                any_face_down=True,
            ),
        )

    def milestones(self, state: PrivilegedState) -> list[bool]:
        red = state.object("red_cube")
        placed = self.goals[0].satisfied(state)
        return [
            red.held or red.ever_held,
            red.held and red.position_m[2] > TABLE_TOP_Z_M + 0.05,
            placed,
            self.success(state),
        ]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        t = self.tolerances
        return gate.check_on_top(
            measurements, RED_CUBE, "red cube", GREEN_CUBE, "green cube", t["xy_m"], t["z_m"]
        )

    def standard(self) -> list[str]:
        return [
            "robosuite's own check: the red cube rests on the green cube (the red cube touches "
            "the green one, is not touched by the gripper, and no longer touches the table).",
            f"`finish()` needs your latest measurements: the red cube's centre within "
            f"{cm(self.tolerances['xy_m'])} of the green cube's horizontally, its bottom within "
            f"{cm(self.tolerances['z_m'])} of the green cube's top. Release it before finishing.",
        ]


class RobosuiteTwoArmLift(RobosuiteTask):
    """robosuite TwoArmLift: two Pandas facing each other lift the red pot by its two handles
    (robosuite: the pot's bottom more than 10 cm above the table)."""

    name = "robosuite_two_arm_lift"
    env_name = "TwoArmLift"
    robots = ("Panda", "Panda")
    objects = {"pot": "pot_root"}
    templates = (
        "lift the red pot with both arms, one hand on each handle",
        "pick up the pot by its green and blue handles, using both arms",
    )
    tolerances = {"lift_m": 0.10, "gate_lift_m": 0.11}
    milestone_names = ("one_grasped", "both_grasped", "lifted_half", "lifted")
    persistent_milestones = frozenset({"lifted"})
    POT_HALF_HEIGHT_M = 0.07

    @property
    def workspace(self) -> Workspace:
        return Workspace(
            rig="robosuite",
            table_top_z_m=TABLE_TOP_Z_M,
            arm_bases={"right": (0.0, -0.56, np.pi / 2), "left": (0.0, 0.56, -np.pi / 2)},
            reach_min_m=0.30,
            reach_max_m=0.80,
            bearing_rad=float(np.deg2rad(60.0)),
        )

    @property
    def goals(self) -> tuple[Goal, ...]:
        return (
            LiftedBy(
                "pot_lifted",
                "pot",
                None,
                table_top_z_m=TABLE_TOP_Z_M,
                target_half_height_m=self.POT_HALF_HEIGHT_M,
                lift_m=self.tolerances["lift_m"],
                max_tilt_rad=float(np.pi),
                n_arms=2,
            ),
        )

    def milestones(self, state: PrivilegedState) -> list[bool]:
        pot = state.object("pot")
        touching = [a for a in state.arm_names if pot.pad_contacts.get(a, 0) >= 1]
        rise = float(pot.position_m[2] - self.POT_HALF_HEIGHT_M - TABLE_TOP_Z_M)
        both = len(touching) >= 2
        return [bool(touching), both, both and rise >= 0.05, self.success(state)]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        rec = gate.latest(measurements, (("pot", "box", "container"),))
        if rec is None:
            return False, "measure the pot with measure_object_geometry while both arms hold it up"
        bottom = gate.bottom_z_m(rec) - TABLE_TOP_Z_M
        need = self.tolerances["gate_lift_m"]
        if bottom < need:
            return False, (
                f"your latest measurement puts the pot's bottom {bottom * 100:.1f} cm above "
                f"the table; lift it to at least {cm(need)}"
            )
        return True, f"the pot's bottom is {bottom * 100:.1f} cm above the table"

    def standard(self) -> list[str]:
        return [
            f"robosuite's own check: the pot's bottom is more than {cm(self.tolerances['lift_m'])} "
            "above the table top.",
            f"`finish()` needs your latest measurement of the pot to put its bottom at least "
            f"{cm(self.tolerances['gate_lift_m'])} above the table. Keep holding it.",
        ]
