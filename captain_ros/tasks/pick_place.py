"""pick_place: "put the red cube on the plate" (single PiPER).

Scene: a 3.5 cm red cube, a 15 cm plate (a flat coloured disc, never red) and one or two distractor
cubes/cylinders of other colours, spread over the reachable sector in front of the arm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.tasks import gate
from captain_ros.tasks.base import Task, cm, deg
from captain_ros.tasks.goals import Goal, PlaceOn
from captain_ros.tasks.scene_parts import (
    Placer,
    distinct_colours,
    free_box,
    free_cylinder,
    sample_environment,
    sample_material,
    sample_yaw,
)

CUBE_HALF_M = 0.0175
PLATE_RADIUS_M = 0.075
PLATE_HALF_HEIGHT_M = 0.006
GAP_M = 0.0005  # objects start this far above their support (no initial penetration)

REACH_M = 0.04
"""A milestone "reached" counts when the tool point is within this of the object centre [m]."""
LIFT_M = 0.05
"""A milestone "lifted" counts when the held object's bottom is this far above the table [m]."""

TEMPLATES = (
    "put the red cube on the plate",
    "place the red cube onto the {plate} plate",
    "pick up the red block and put it on the plate",
    "move the red cube onto the {plate} plate",
    "set the red cube down on the {plate} plate",
    "put the red block on the {plate} dish",
)

RED = (("red",), ("cube", "block", "box"))
PLATE = (("plate", "dish", "disc", "disk"),)


def add_distractors(
    rng: np.random.Generator,
    placer: Placer,
    n: int,
    exclude: Sequence[str],
    top_z_m: float,
    box: tuple[float, float, float, float] | None = None,
) -> tuple[list[str], list[str], list[str]]:
    """``n`` distractor cubes/cylinders: (worldbody xml, asset xml, body names).

    ``box`` = (x_min, x_max, y_min, y_max) restricts them to a rectangle [m]; otherwise they are
    spread over the placer's reachable sector.
    """
    bodies, assets, names = [], [], []
    for colour in distinct_colours(rng, n, exclude):
        shape = "cube" if rng.random() < 0.6 else "cylinder"
        name = f"{colour}_{shape}"
        mat = sample_material(rng, f"mat_{name}", colour)
        xy = placer.sample_xy(0.028, box=box)
        if shape == "cube":
            pos = (xy[0], xy[1], top_z_m + CUBE_HALF_M + GAP_M)
            bodies.append(free_box(name, pos, (CUBE_HALF_M,) * 3, mat.name, 0.05, sample_yaw(rng)))
        else:
            pos = (xy[0], xy[1], top_z_m + 0.025 + GAP_M)
            bodies.append(free_cylinder(name, pos, 0.018, 0.025, mat.name, 0.05))
        assets.append(mat.xml())
        names.append(name)
    return bodies, assets, names


class PickPlace(Task):
    """Put the red cube on the plate."""

    name = "pick_place"
    rig = "piper"
    tolerances = {"xy_m": 0.035, "z_m": 0.012, "tilt_rad": float(np.deg2rad(20.0))}
    milestone_names = ("reached", "grasped", "lifted", "above_target", "placed", "released")
    persistent_milestones = frozenset({"above_target", "placed", "released"})

    @property
    def goals(self) -> tuple[Goal, ...]:
        t = self.tolerances
        return (
            PlaceOn(
                "red_cube_on_plate",
                "red_cube",
                "plate",
                target_half_height_m=CUBE_HALF_M,
                support_top_offset_m=PLATE_HALF_HEIGHT_M,
                tol_xy_m=t["xy_m"],
                tol_z_m=t["z_m"],
                max_tilt_rad=t["tilt_rad"],
                any_face_down=True,
            ),
        )

    def _plate_colour(self, seed: int) -> str:
        return distinct_colours(self.rng(seed, 1), 1, exclude=("red", "orange", "magenta"))[0]

    def sample(self, seed: int) -> SceneSpec:
        rng = self.rng(seed)
        ws = self.workspace
        z0 = ws.table_top_z_m
        placer = Placer(rng, ws)
        plate_colour = self._plate_colour(seed)
        plate_xy = placer.sample_xy(PLATE_RADIUS_M)
        cube_xy = placer.sample_xy(0.025)
        red = sample_material(rng, "mat_red_cube", "red")
        plate = sample_material(rng, "mat_plate", plate_colour)
        bodies = [
            free_box(
                "red_cube",
                (cube_xy[0], cube_xy[1], z0 + CUBE_HALF_M + GAP_M),
                (CUBE_HALF_M,) * 3,
                red.name,
                0.05,
                sample_yaw(rng),
            ),
            free_cylinder(
                "plate",
                (plate_xy[0], plate_xy[1], z0 + PLATE_HALF_HEIGHT_M + GAP_M),
                PLATE_RADIUS_M,
                PLATE_HALF_HEIGHT_M,
                plate.name,
                0.3,
            ),
        ]
        n_distract = int(rng.integers(1, 3))
        d_bodies, d_assets, d_names = add_distractors(
            rng, placer, n_distract, ("red", "orange", "magenta", plate_colour), z0
        )
        env = sample_environment(rng)
        return SceneSpec(
            rig=self.rig,
            worldbody_xml="\n".join(bodies + d_bodies),
            asset_xml="\n".join([red.xml(), plate.xml()] + d_assets),
            object_bodies=("red_cube", "plate", *d_names),
            light_diffuse=env.light_diffuse,
            light_pos_m=env.light_pos_m,
            camera_jitter_m=env.camera_jitter_m,
            camera_jitter_rad=env.camera_jitter_rad,
            seed=int(seed),
        )

    def instruction(self, seed: int) -> str:
        rng = self.rng(seed, 2)
        return TEMPLATES[int(rng.integers(len(TEMPLATES)))].format(plate=self._plate_colour(seed))

    def milestones(self, state: PrivilegedState) -> list[bool]:
        goal = self.goals[0]
        assert isinstance(goal, PlaceOn)
        return cube_ladder(state, goal, self.workspace.table_top_z_m)

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        t = self.tolerances
        return gate.check_on_top(measurements, RED, "red cube", PLATE, "plate", t["xy_m"], t["z_m"])

    def standard(self) -> list[str]:
        t = self.tolerances
        return [
            f"The red cube rests on the plate: its centre within {cm(t['xy_m'])} (horizontally) of "
            f"the plate's centre, its bottom within {cm(t['z_m'])} of the plate's top surface, "
            f"flat on a face (tilted at most {deg(t['tilt_rad'])}; any face of a cube may be down).",
            "The gripper has released the cube (it is not held at the end).",
        ]


def cube_ladder(state: PrivilegedState, goal: PlaceOn, table_z_m: float) -> list[bool]:
    """reached, grasped, lifted, above_target, placed, released for a place-on goal."""
    assert goal.destination is not None
    p = state.object(goal.target).position_m
    dst = state.object(goal.destination).position_m
    arms = state.arm_names
    reached = any(np.linalg.norm(state.arm(a).tcp_position_m - p) <= REACH_M for a in arms)
    held = state.object(goal.target).held
    lifted = held and p[2] - goal.target_half_height_m - table_z_m >= LIFT_M
    support_top = dst[2] + goal.support_top_offset_m
    above = (
        np.linalg.norm(p[:2] - dst[:2]) <= goal.tol_xy_m
        and p[2] - goal.target_half_height_m >= support_top - goal.tol_z_m
    )
    placed = goal.placed(state)
    return [
        bool(reached),
        bool(held),
        bool(lifted),
        bool(above),
        bool(placed),
        bool(placed and not held),
    ]
