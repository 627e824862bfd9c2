"""restack: the blue cube sits on the red cube; swap them so red ends up on top of blue (single PiPER).

Two goals in order: the blue cube rests on the table (taken off the red one), then the red cube
rests on the blue cube.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.tasks import gate
from captain_ros.tasks.base import Task, cm, deg
from captain_ros.tasks.goals import Goal, PlaceOn, RestOnTable
from captain_ros.tasks.pick_place import CUBE_HALF_M, GAP_M, LIFT_M, add_distractors, cube_ladder
from captain_ros.tasks.scene_parts import (
    Placer,
    free_box,
    sample_environment,
    sample_material,
    sample_yaw,
)

TEMPLATES = (
    "the blue cube is stacked on the red cube; restack them so the red cube is on top of the blue cube",
    "swap the two stacked cubes so that red is on top of blue",
    "take the blue block off the red block, then put the red block on the blue block",
    "reverse the stack: the red cube must end up on the blue cube",
    "unstack the blue cube and stack the red cube on it",
)

CUBE = ("cube", "block", "box")
RED = (("red",), CUBE)
BLUE = (("blue",), CUBE)


class Restack(Task):
    """Blue off red onto the table, then red on blue."""

    name = "restack"
    rig = "piper"
    tolerances = {"xy_m": 0.02, "z_m": 0.012, "tilt_rad": float(np.deg2rad(20.0))}
    milestone_names = (
        "top_grasped",
        "top_lifted",
        "top_on_table",
        "bottom_grasped",
        "bottom_lifted",
        "bottom_placed",
        "released",
    )
    persistent_milestones = frozenset({"top_on_table", "bottom_placed", "released"})

    @property
    def goals(self) -> tuple[Goal, ...]:
        t = self.tolerances
        return (
            RestOnTable(
                "blue_on_table",
                "blue_cube",
                None,
                table_top_z_m=self.workspace.table_top_z_m,
                target_half_height_m=CUBE_HALF_M,
                tol_z_m=t["z_m"],
                max_tilt_rad=t["tilt_rad"],
                any_face_down=True,
            ),
            PlaceOn(
                "red_on_blue",
                "red_cube",
                "blue_cube",
                target_half_height_m=CUBE_HALF_M,
                support_top_offset_m=CUBE_HALF_M,
                tol_xy_m=t["xy_m"],
                tol_z_m=t["z_m"],
                max_tilt_rad=t["tilt_rad"],
                any_face_down=True,
            ),
        )

    def sample(self, seed: int) -> SceneSpec:
        rng = self.rng(seed)
        ws = self.workspace
        z0 = ws.table_top_z_m
        placer = Placer(rng, ws)
        # the tower leaves room to set the blue cube down beside it
        xy = placer.sample_xy(0.025, r_max_m=0.37, clearance_m=0.10)
        yaw = sample_yaw(rng)
        red = sample_material(rng, "mat_red_cube", "red")
        blue = sample_material(rng, "mat_blue_cube", "blue")
        bodies = [
            free_box(
                "red_cube",
                (xy[0], xy[1], z0 + CUBE_HALF_M + GAP_M),
                (CUBE_HALF_M,) * 3,
                red.name,
                0.05,
                yaw,
            ),
            free_box(
                "blue_cube",
                (xy[0], xy[1], z0 + 3 * CUBE_HALF_M + 2 * GAP_M),
                (CUBE_HALF_M,) * 3,
                blue.name,
                0.05,
                yaw + float(rng.uniform(-0.15, 0.15)),
            ),
        ]
        d_bodies, d_assets, d_names = add_distractors(
            rng, placer, int(rng.integers(0, 3)), ("red", "blue", "purple", "magenta", "cyan"), z0
        )
        env = sample_environment(rng)
        return SceneSpec(
            rig=self.rig,
            worldbody_xml="\n".join(bodies + d_bodies),
            asset_xml="\n".join([red.xml(), blue.xml()] + d_assets),
            object_bodies=("red_cube", "blue_cube", *d_names),
            light_diffuse=env.light_diffuse,
            light_pos_m=env.light_pos_m,
            camera_jitter_m=env.camera_jitter_m,
            camera_jitter_rad=env.camera_jitter_rad,
            seed=int(seed),
        )

    def instruction(self, seed: int) -> str:
        return TEMPLATES[int(self.rng(seed, 2).integers(len(TEMPLATES)))]

    def milestones(self, state: PrivilegedState) -> list[bool]:
        off, on = self.goals
        assert isinstance(on, PlaceOn)
        z0 = self.workspace.table_top_z_m
        blue_held = state.object("blue_cube").held
        blue_z = state.object("blue_cube").position_m[2]
        blue_off = off.satisfied(state)
        m2 = cube_ladder(state, on, z0)
        return [
            bool(v)
            for v in (
                blue_held or blue_off,
                (blue_held and blue_z - CUBE_HALF_M - z0 >= LIFT_M) or blue_off,
                blue_off,
                blue_off and m2[1],
                blue_off and m2[2],
                blue_off and m2[4],
                self.success(state),
            )
        ]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        t = self.tolerances
        return gate.check_on_top(
            measurements, RED, "red cube", BLUE, "blue cube", t["xy_m"], t["z_m"]
        )

    def standard(self) -> list[str]:
        t = self.tolerances
        return [
            f"The blue cube rests on the table (its bottom within {cm(t['z_m'])} of the table top).",
            f"The red cube rests on the blue cube: its centre within {cm(t['xy_m'])} (horizontally) "
            f"of the blue cube's centre, its bottom within {cm(t['z_m'])} of the blue cube's top, "
            f"flat on a face (tilted at most {deg(t['tilt_rad'])}; any face of a cube may be down).",
            "No cube is held at the end.",
        ]
