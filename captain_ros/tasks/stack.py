"""stack: build a three-cube tower, blue at the bottom, green in the middle, red on top (single PiPER).

Scene: three 3.5 cm cubes (red, green, blue) and up to one distractor, spread over the reachable
sector. Two goals in order: green on blue, then red on green.
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
from captain_ros.tasks.pick_place import CUBE_HALF_M, GAP_M, add_distractors, cube_ladder
from captain_ros.tasks.scene_parts import (
    Placer,
    free_box,
    sample_environment,
    sample_material,
    sample_yaw,
)

TEMPLATES = (
    "stack the cubes: blue at the bottom, green in the middle, red on top",
    "build a tower with the green cube on the blue cube and the red cube on the green cube",
    "put the green block on the blue block, then put the red block on the green block",
    "stack the green cube on the blue one and the red cube on top of the green one",
    "make a three-cube stack: red on green on blue",
)

CUBE = ("cube", "block", "box")
RED = (("red",), CUBE)
GREEN = (("green",), CUBE)
BLUE = (("blue",), CUBE)


class Stack(Task):
    """Green on blue, red on green."""

    name = "stack"
    rig = "piper"
    tolerances = {"xy_m": 0.02, "z_m": 0.012, "tilt_rad": float(np.deg2rad(20.0))}
    milestone_names = (
        "middle_grasped",
        "middle_lifted",
        "middle_placed",
        "top_grasped",
        "top_lifted",
        "top_placed",
        "released",
    )
    persistent_milestones = frozenset({"middle_placed", "top_placed", "released"})

    @property
    def goals(self) -> tuple[Goal, ...]:
        t = self.tolerances
        kw = dict(
            target_half_height_m=CUBE_HALF_M,
            support_top_offset_m=CUBE_HALF_M,
            tol_xy_m=t["xy_m"],
            tol_z_m=t["z_m"],
            max_tilt_rad=t["tilt_rad"],
            any_face_down=True,
        )
        return (
            PlaceOn("green_on_blue", "green_cube", "blue_cube", **kw),  # type: ignore[arg-type]
            PlaceOn("red_on_green", "red_cube", "green_cube", **kw),  # type: ignore[arg-type]
        )

    def sample(self, seed: int) -> SceneSpec:
        rng = self.rng(seed)
        ws = self.workspace
        placer = Placer(rng, ws)
        bodies, assets = [], []
        for colour in ("red", "green", "blue"):
            xy = placer.sample_xy(0.025, r_max_m=0.37)  # the top cube is carried 11 cm high
            mat = sample_material(rng, f"mat_{colour}_cube", colour)
            pos = (xy[0], xy[1], ws.table_top_z_m + CUBE_HALF_M + GAP_M)
            bodies.append(
                free_box(f"{colour}_cube", pos, (CUBE_HALF_M,) * 3, mat.name, 0.05, sample_yaw(rng))
            )
            assets.append(mat.xml())
        d_bodies, d_assets, d_names = add_distractors(
            rng,
            placer,
            int(rng.integers(0, 2)),
            ("red", "green", "blue", "cyan", "orange", "magenta"),
            ws.table_top_z_m,
        )
        env = sample_environment(rng)
        return SceneSpec(
            rig=self.rig,
            worldbody_xml="\n".join(bodies + d_bodies),
            asset_xml="\n".join(assets + d_assets),
            object_bodies=("red_cube", "green_cube", "blue_cube", *d_names),
            light_diffuse=env.light_diffuse,
            light_pos_m=env.light_pos_m,
            camera_jitter_m=env.camera_jitter_m,
            camera_jitter_rad=env.camera_jitter_rad,
            seed=int(seed),
        )

    def instruction(self, seed: int) -> str:
        return TEMPLATES[int(self.rng(seed, 2).integers(len(TEMPLATES)))]

    def milestones(self, state: PrivilegedState) -> list[bool]:
        g1, g2 = self.goals
        assert isinstance(g1, PlaceOn) and isinstance(g2, PlaceOn)
        z0 = self.workspace.table_top_z_m
        m1 = cube_ladder(state, g1, z0)  # reached, grasped, lifted, above, placed, released
        m2 = cube_ladder(state, g2, z0)
        mid_done = g1.satisfied(state)
        return [
            m1[1] or mid_done,
            m1[2] or mid_done,
            mid_done,
            mid_done and m2[1],
            mid_done and m2[2],
            mid_done and m2[4],
            self.success(state),
        ]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        t = self.tolerances
        ok, why = gate.check_on_top(
            measurements, RED, "red cube", GREEN, "green cube", t["xy_m"], t["z_m"]
        )
        if not ok:
            return False, why
        top = gate.latest(measurements, RED, GREEN)
        rest = [m for m in measurements if m is not top]
        # the middle cube is partly hidden under the top one: its "resting" flag is not required
        # (the top cube resting on it, and its bottom at the blue cube's top, already say so)
        ok2, why2 = gate.check_on_top(
            rest, GREEN, "green cube", BLUE, "blue cube", t["xy_m"], t["z_m"], need_resting=False
        )
        if not ok2:
            return False, why2 + " (measure the green cube against the blue cube as well)"
        return True, "red on green on blue, as measured"

    def standard(self) -> list[str]:
        t = self.tolerances
        return [
            f"The green cube rests on the blue cube and the red cube rests on the green cube: each "
            f"upper cube's centre within {cm(t['xy_m'])} (horizontally) of the centre of the cube "
            f"below, its bottom within {cm(t['z_m'])} of that cube's top, tilted at most "
            f"{deg(t['tilt_rad'])} from resting flat on a face (any face of a cube may be down).",
            "No cube is held at the end.",
        ]
