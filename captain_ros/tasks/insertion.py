"""insertion: put a peg into the square hole of a block (single PiPER).

Scene: an upright 2.5 cm-diameter, 8 cm-tall peg (body ``peg``, a named colour) and a fixed
10 cm x 10 cm x 3 cm block (body ``hole_block``, another named colour) with a 3.1 cm square
through-hole at its centre (3 mm clearance per side), plus up to one distractor.
Success: the peg axis within 8 mm of the hole axis, its bottom at least 2 cm below the block top,
tilted at most 12 deg (held or released).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.tasks import gate
from captain_ros.tasks.base import Task, cm, deg
from captain_ros.tasks.goals import Goal, InsertedInto
from captain_ros.tasks.pick_place import GAP_M, REACH_M, add_distractors
from captain_ros.tasks.scene_parts import (
    Placer,
    distinct_colours,
    free_cylinder,
    sample_environment,
    sample_material,
)

PEG_RADIUS_M = 0.0125
PEG_HALF_HEIGHT_M = 0.04
HOLE_HALF_M = 0.0155  # square hole half side (3 mm clearance per side)
BLOCK_HALF_M = 0.05  # block outer half side
BLOCK_HEIGHT_M = 0.03

TEMPLATES = (
    "insert the {peg} peg into the hole of the {block} block",
    "put the {peg} peg into the {block} block's hole",
    "pick up the {peg} peg and insert it into the hole",
    "place the {peg} peg upright in the hole of the {block} block",
)

PEG = (("peg", "pin", "rod", "cylinder"),)
BLOCK = (("block", "hole", "box", "base"),)


class Insertion(Task):
    """Peg in hole."""

    name = "insertion"
    rig = "piper"
    tolerances = {
        "xy_m": 0.008,
        "depth_m": 0.02,
        "tilt_rad": float(np.deg2rad(12.0)),
        "gate_z_m": 0.01,
    }
    milestone_names = ("reached", "grasped", "lifted", "above_hole", "partly_inserted", "inserted")
    persistent_milestones = frozenset({"above_hole", "partly_inserted", "inserted"})

    @property
    def goals(self) -> tuple[Goal, ...]:
        t = self.tolerances
        return (
            InsertedInto(
                "peg_in_hole",
                "peg",
                "hole_block",
                target_half_height_m=PEG_HALF_HEIGHT_M,
                hole_top_offset_m=BLOCK_HEIGHT_M,
                tol_xy_m=t["xy_m"],
                depth_m=t["depth_m"],
                max_tilt_rad=t["tilt_rad"],
            ),
        )

    def _colours(self, seed: int) -> tuple[str, str]:
        a, b = distinct_colours(self.rng(seed, 1), 2)
        return a, b

    def sample(self, seed: int) -> SceneSpec:
        rng = self.rng(seed)
        ws = self.workspace
        z0 = ws.table_top_z_m
        peg_colour, block_colour = self._colours(seed)
        placer = Placer(rng, ws)
        # the peg is carried with its bottom 2 cm above the block (tool 11.5 cm high): r <= 0.36 m
        block_xy = placer.sample_xy(BLOCK_HALF_M * 1.42, r_max_m=0.36)
        peg_xy = placer.sample_xy(PEG_RADIUS_M + 0.01, r_max_m=0.36)
        yaw = float(rng.uniform(-np.pi / 4, np.pi / 4))
        peg = sample_material(rng, "mat_peg", peg_colour)
        blk = sample_material(rng, "mat_hole_block", block_colour)
        a, b, h = HOLE_HALF_M, BLOCK_HALF_M, BLOCK_HEIGHT_M / 2
        wall = (b - a) / 2
        parts = [
            ((0, a + wall, h), (b, wall, h)),
            ((0, -a - wall, h), (b, wall, h)),
            ((a + wall, 0, h), (wall, a, h)),
            ((-a - wall, 0, h), (wall, a, h)),
        ]
        geoms = "".join(
            f'<geom name="hole_block_g{i}" type="box" pos="{p[0]:.4f} {p[1]:.4f} {p[2]:.4f}" '
            f'size="{s[0]:.4f} {s[1]:.4f} {s[2]:.4f}" material="mat_hole_block"/>'
            for i, (p, s) in enumerate(parts)
        )
        block = (
            f'<body name="hole_block" pos="{block_xy[0]:.4f} {block_xy[1]:.4f} {z0:.4f}" '
            f'quat="{np.cos(yaw / 2):.6f} 0 0 {np.sin(yaw / 2):.6f}">{geoms}</body>'
        )
        peg_body = free_cylinder(
            "peg",
            (peg_xy[0], peg_xy[1], z0 + PEG_HALF_HEIGHT_M + GAP_M),
            PEG_RADIUS_M,
            PEG_HALF_HEIGHT_M,
            peg.name,
            0.04,
        )
        d_bodies, d_assets, d_names = add_distractors(
            rng, placer, int(rng.integers(0, 2)), (peg_colour, block_colour), z0
        )
        env = sample_environment(rng)
        return SceneSpec(
            rig=self.rig,
            worldbody_xml="\n".join([block, peg_body] + d_bodies),
            asset_xml="\n".join([peg.xml(), blk.xml()] + d_assets),
            object_bodies=("peg", "hole_block", *d_names),
            light_diffuse=env.light_diffuse,
            light_pos_m=env.light_pos_m,
            camera_jitter_m=env.camera_jitter_m,
            camera_jitter_rad=env.camera_jitter_rad,
            seed=int(seed),
        )

    def instruction(self, seed: int) -> str:
        p, b = self._colours(seed)
        return TEMPLATES[int(self.rng(seed, 2).integers(len(TEMPLATES)))].format(peg=p, block=b)

    def milestones(self, state: PrivilegedState) -> list[bool]:
        goal = self.goals[0]
        assert isinstance(goal, InsertedInto)
        p = state.object("peg").position_m
        reached = any(
            np.linalg.norm(state.arm(a).tcp_position_m - p) <= REACH_M for a in state.arm_names
        )
        held = state.object("peg").held
        bottom = p[2] - PEG_HALF_HEIGHT_M - self.workspace.table_top_z_m
        depth = goal.depth_of(state)
        above = goal.xy_error_m(state) <= goal.tol_xy_m + 0.004 and depth > -0.05
        # "lifted": held with its bottom above the block's top (high enough to carry over it)
        return [
            bool(reached),
            bool(held),
            bool(held and bottom >= BLOCK_HEIGHT_M + 0.005),
            bool(above),
            bool(above and depth >= 0.005),
            goal.satisfied(state),
        ]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        t = self.tolerances
        rec = gate.latest(measurements, PEG, BLOCK)
        if rec is None:
            return False, (
                "no measurement of the peg with destination=<the hole block>: call "
                "measure_object_geometry(<peg>, destination=<block>) after inserting it"
            )
        d = rec["destination"]
        dist = float(d.get("distance_xy_m", float("inf")))
        if dist > t["xy_m"]:
            return False, (
                f"the peg is {dist * 100:.1f} cm from the hole's centre (tolerance {cm(t['xy_m'])})"
            )
        # the peg's top must be low enough that its bottom is depth_m below the block top
        max_top = float(d["top_z_m"]) + 2 * PEG_HALF_HEIGHT_M - t["depth_m"] + t["gate_z_m"]
        if float(rec["top_z_m"]) > max_top:
            return False, (
                f"the peg's top is at {float(rec['top_z_m']) * 100:.1f} cm; inserted "
                f"{cm(t['depth_m'])} deep it would be at most {max_top * 100:.1f} cm"
            )
        return True, f"the peg stands in the hole ({dist * 100:.1f} cm off its axis)"

    def standard(self) -> list[str]:
        t = self.tolerances
        return [
            f"The peg stands in the block's hole: its axis within {cm(t['xy_m'])} of the hole's centre, "
            f"its bottom at least {cm(t['depth_m'])} below the block's top surface, tilted at most "
            f"{deg(t['tilt_rad'])}. The peg is {cm(2 * PEG_HALF_HEIGHT_M)} tall and "
            f"{cm(2 * PEG_RADIUS_M)} wide; the hole is {cm(2 * HOLE_HALF_M)} square.",
            "It may stay held or be released.",
        ]
