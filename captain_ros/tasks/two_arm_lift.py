"""two_arm_lift: lift a long box with both arms (dual PiPER rig).

Scene: a 32 cm x 3.5 cm x 3.5 cm box (body ``long_box``, a named colour) lying across the table
between the two arms, its ends within reach of one arm each; one distractor cube may sit nearby.
Success: the box's bottom at least 8 cm above the table, level within 15 deg, pinched by both
grippers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.tasks import gate
from captain_ros.tasks.base import Task, cm, deg
from captain_ros.tasks.goals import Goal, LiftedBy
from captain_ros.tasks.pick_place import GAP_M, add_distractors
from captain_ros.tasks.scene_parts import (
    Placer,
    distinct_colours,
    free_box,
    sample_environment,
    sample_material,
)

BOX_HALF_M = (0.0175, 0.16, 0.0175)  # (x, y, z) half extents; long along y
BOX_MASS_KG = 0.25
END_GRASP_M = 0.135
"""Grasp points: +-this far from the box centre along its long axis [m]."""

TEMPLATES = (
    "lift the long {colour} box with both arms",
    "use both grippers to lift the {colour} bar off the table",
    "grasp the long {colour} box at both ends and raise it by at least eight centimetres",
    "pick up the long {colour} block with two arms and hold it level in the air",
)


class TwoArmLift(Task):
    """Lift the long box with both arms."""

    name = "two_arm_lift"
    rig = "piper_dual"
    tolerances = {"lift_m": 0.08, "tilt_rad": float(np.deg2rad(15.0)), "gate_slack_m": 0.01}
    milestone_names = (
        "one_reached",
        "both_reached",
        "one_grasped",
        "both_grasped",
        "lifted_half",
        "lifted",
    )
    persistent_milestones = frozenset({"lifted_half", "lifted"})

    @property
    def goals(self) -> tuple[Goal, ...]:
        t = self.tolerances
        return (
            LiftedBy(
                "box_lifted",
                "long_box",
                None,
                table_top_z_m=self.workspace.table_top_z_m,
                target_half_height_m=BOX_HALF_M[2],
                lift_m=t["lift_m"],
                max_tilt_rad=t["tilt_rad"],
                n_arms=2,
            ),
        )

    def _colour(self, seed: int) -> str:
        return distinct_colours(self.rng(seed, 1), 1)[0]

    def sample(self, seed: int) -> SceneSpec:
        rng = self.rng(seed)
        ws = self.workspace
        z0 = ws.table_top_z_m
        # each arm lifts its end to 10 cm: its tool must stay within ~0.35 m of its base
        xy = np.array([rng.uniform(0.18, 0.30), rng.uniform(-0.06, 0.06)])
        yaw = float(rng.uniform(-np.deg2rad(15), np.deg2rad(15)))
        colour = self._colour(seed)
        mat = sample_material(rng, "mat_long_box", colour)
        body = free_box(
            "long_box",
            (xy[0], xy[1], z0 + BOX_HALF_M[2] + GAP_M),
            BOX_HALF_M,
            mat.name,
            BOX_MASS_KG,
            yaw,
        )
        placer = Placer(rng, ws, arm="left")
        for s in (-1, 0, 1):  # keep the distractor off the box
            placer.reserve(xy + s * 0.11 * np.array([-np.sin(yaw), np.cos(yaw)]), 0.06)
        # at most one distractor 12-20 cm beyond the box, between the arms
        box = (xy[0] + 0.12, xy[0] + 0.20, -0.15, 0.15)
        d_bodies, d_assets, d_names = add_distractors(
            rng, placer, int(rng.integers(0, 2)), (colour,), z0, box=box
        )
        env = sample_environment(rng)
        return SceneSpec(
            rig=self.rig,
            worldbody_xml="\n".join([body] + d_bodies),
            asset_xml="\n".join([mat.xml()] + d_assets),
            object_bodies=("long_box", *d_names),
            light_diffuse=env.light_diffuse,
            light_pos_m=env.light_pos_m,
            camera_jitter_m=env.camera_jitter_m,
            camera_jitter_rad=env.camera_jitter_rad,
            seed=int(seed),
        )

    def instruction(self, seed: int) -> str:
        return TEMPLATES[int(self.rng(seed, 2).integers(len(TEMPLATES)))].format(
            colour=self._colour(seed)
        )

    def grasp_points_m(self, state: PrivilegedState) -> dict[str, np.ndarray]:
        """Suggested grasp points of the box ends for each arm (the end nearer to that arm)."""
        p = state.object("long_box").position_m
        w, x, y, z = state.object("long_box").quat_wxyz
        axis = np.array(
            [2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)]
        )  # body y
        ends = [p + END_GRASP_M * axis, p - END_GRASP_M * axis]
        out = {}
        for arm in state.arm_names:
            base = np.array(self.workspace.arm_bases.get(arm, (0.0, 0.0, 0.0))[:2])
            out[arm] = min(ends, key=lambda e: float(np.linalg.norm(e[:2] - base)))
        return out

    def milestones(self, state: PrivilegedState) -> list[bool]:
        goal = self.goals[0]
        assert isinstance(goal, LiftedBy)
        arms = state.arm_names
        grasps = self.grasp_points_m(state)
        reached = [np.linalg.norm(state.arm(a).tcp_position_m - grasps[a]) <= 0.05 for a in arms]
        held = [state.object("long_box").held_by_arm(a) for a in arms]
        lift = goal.lift_m_of(state)
        both = len(arms) >= 2 and all(held)
        return [
            any(reached),
            len(arms) >= 2 and all(reached),
            any(held),
            both,
            both and lift >= 0.5 * goal.lift_m,
            goal.satisfied(state),
        ]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        t = self.tolerances
        rec = gate.latest(measurements, (("box", "bar", "block", "beam"),))
        if rec is None:
            return (
                False,
                "measure the long box with measure_object_geometry while both arms hold it up",
            )
        bottom = gate.bottom_z_m(rec) - self.workspace.table_top_z_m
        need = t["lift_m"] - t["gate_slack_m"]
        if bottom < need:
            return False, (
                f"your latest measurement puts the box's bottom {bottom * 100:.1f} cm above the "
                f"table; lift it to at least {cm(t['lift_m'])}"
            )
        if rec.get("resting", False):
            return (
                False,
                "the latest measurement says the box is resting: it must be held up by both arms",
            )
        return True, f"the box is {bottom * 100:.1f} cm above the table"

    def standard(self) -> list[str]:
        t = self.tolerances
        return [
            f"The long box is held by both grippers with its bottom at least {cm(t['lift_m'])} above the "
            f"table top, tilted at most {deg(t['tilt_rad'])} from level.",
            "It stays held at the end (do not release it).",
        ]
