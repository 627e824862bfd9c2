"""open_drawer: pull a drawer open by its coloured handle (single PiPER).

Scene: a low fixed cabinet (grey) facing the arm, with one drawer on the slide joint
``drawer_slide`` (0 = closed, positive = open toward the robot, up to 15 cm) and a horizontal bar
handle (body ``drawer_handle``) standing 5 cm off the drawer front. The cabinet is yawed so the
drawer pulls straight toward the arm base; a top-down grasp straddles the bar along that axis.
Cabinet walls and the drawer do not collide with each other (the joint guides the drawer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.tasks import gate
from captain_ros.tasks.base import Task, cm
from captain_ros.tasks.goals import Goal, JointAtLeast
from captain_ros.tasks.pick_place import REACH_M, add_distractors
from captain_ros.tasks.scene_parts import (
    Placer,
    distinct_colours,
    grey_material,
    sample_environment,
    sample_material,
)

DEPTH_M = 0.20  # cabinet depth along its pull axis
WIDTH_M = 0.24  # cabinet width
HEIGHT_M = 0.10  # cabinet height
WALL_M = 0.008  # wall thickness
STANDOFF_M = 0.05  # handle bar axis in front of the drawer front
HANDLE_Z_M = 0.06  # handle bar axis above the table
HANDLE_R_M = 0.008  # handle bar radius
HANDLE_HALF_LEN_M = 0.05
TRAVEL_M = 0.15  # slide range

TEMPLATES = (
    "open the drawer",
    "pull the drawer open by its {colour} handle",
    "open the drawer by at least ten centimetres",
    "grab the {colour} handle and pull the drawer out",
    "slide the drawer of the cabinet open",
)

HANDLE = (("handle", "knob", "grip", "drawer"),)
CABINET = (("cabinet", "drawer", "box"),)


class OpenDrawer(Task):
    """Open the drawer by at least ``open_m``."""

    name = "open_drawer"
    rig = "piper"
    tolerances = {"open_m": 0.10, "gate_slack_m": 0.02}
    milestone_names = ("reached", "grasped", "opened_20pct", "opened_half", "opened")
    persistent_milestones = frozenset({"opened_20pct", "opened_half", "opened"})

    @property
    def goals(self) -> tuple[Goal, ...]:
        return (
            JointAtLeast(
                "drawer_open",
                "drawer_handle",
                None,
                joint="drawer_slide",
                open_m=self.tolerances["open_m"],
            ),
        )

    def _handle_colour(self, seed: int) -> str:
        return distinct_colours(self.rng(seed, 1), 1)[0]

    def sample(self, seed: int) -> SceneSpec:
        rng = self.rng(seed)
        ws = self.workspace
        z0 = ws.table_top_z_m
        base_xy, heading = ws.arm_base_xy_heading()
        # handle (closed) at 0.24-0.40 m from the base: open by 0.15 it stays >= 0.12 m away
        r_handle = float(rng.uniform(0.26, 0.36))
        bearing = heading + float(rng.uniform(-np.deg2rad(40), np.deg2rad(40)))
        u = np.array([np.cos(bearing), np.sin(bearing)])
        centre = base_xy + (r_handle + STANDOFF_M + DEPTH_M / 2) * u
        yaw = bearing  # cabinet +x points away from the robot; the drawer pulls along -x
        cab = grey_material(rng, "mat_cabinet", 0.5, 0.7)
        front = grey_material(rng, "mat_drawer", 0.72, 0.9)
        handle = sample_material(rng, "mat_drawer_handle", self._handle_colour(seed))
        d, w, h, t = DEPTH_M / 2, WIDTH_M / 2, HEIGHT_M / 2, WALL_M / 2
        walls = [  # (pos, half-size) in the cabinet frame, origin at the floor centre
            ((0, 0, t), (d, w, t)),
            ((0, 0, HEIGHT_M - t), (d, w, t)),
            ((0, w - t, h), (d, t, h)),
            ((0, -w + t, h), (d, t, h)),
            ((d - t, 0, h), (t, w, h)),
        ]
        cab_geoms = "".join(
            f'<geom name="cabinet_g{i}" type="box" pos="{p[0]:.4f} {p[1]:.4f} {p[2]:.4f}" '
            f'size="{s[0]:.4f} {s[1]:.4f} {s[2]:.4f}" material="mat_cabinet" contype="4" conaffinity="5"/>'
            for i, (p, s) in enumerate(walls)
        )
        dw, dh = w - 2 * t - 0.003, h - 2 * t - 0.004  # drawer half width / half height
        dd = d - t - 0.004  # drawer half depth
        dz = 2 * t + 0.002 + dh  # drawer centre height
        drawer_geoms = "".join(
            f'<geom name="drawer_g{i}" type="box" pos="{p[0]:.4f} {p[1]:.4f} {p[2]:.4f}" '
            f'size="{s[0]:.4f} {s[1]:.4f} {s[2]:.4f}" material="{m}" contype="2" conaffinity="1" mass="{ms}"/>'
            for i, (p, s, m, ms) in enumerate(
                [
                    ((0, 0, -dh + t), (dd, dw, t), "mat_drawer", 0.1),
                    ((0, dw - t, 0), (dd, t, dh), "mat_drawer", 0.05),
                    ((0, -dw + t, 0), (dd, t, dh), "mat_drawer", 0.05),
                    ((dd - t, 0, 0), (t, dw, dh), "mat_drawer", 0.05),
                    (
                        (-d - t + 0.004, 0, 0.002),
                        (t, w - 0.002, h - 0.002),
                        "mat_drawer",
                        0.1,
                    ),  # front panel
                ]
            )
        )
        front_x = -d + 0.004 - 2 * t  # outer face of the front panel (cabinet frame, closed)
        hx = front_x - STANDOFF_M  # handle axis, cabinet frame
        hz = HANDLE_Z_M - z0 - dz  # handle axis relative to the drawer centre
        handle_geoms = (
            f'<geom name="drawer_handle_bar" type="capsule" size="{HANDLE_R_M}" '
            f'fromto="0 {-HANDLE_HALF_LEN_M} 0 0 {HANDLE_HALF_LEN_M} 0" material="mat_drawer_handle" '
            f'contype="2" conaffinity="1" mass="0.03" friction="1.2 0.01 0.0002" condim="4"/>'
            + "".join(
                f'<geom name="drawer_handle_post{i}" type="box" pos="{STANDOFF_M / 2:.4f} {y:.4f} 0" '
                f'size="{STANDOFF_M / 2:.4f} 0.005 0.005" material="mat_drawer_handle" contype="2" '
                f'conaffinity="1" mass="0.01"/>'
                for i, y in enumerate((-0.04, 0.04))
            )
        )
        xml = (
            f'<body name="cabinet" pos="{centre[0]:.4f} {centre[1]:.4f} {z0:.4f}" '
            f'quat="{np.cos(yaw / 2):.6f} 0 0 {np.sin(yaw / 2):.6f}">{cab_geoms}'
            f'<body name="drawer" pos="0 0 {dz:.4f}">'
            f'<joint name="drawer_slide" type="slide" axis="-1 0 0" range="0 {TRAVEL_M}" damping="3" '
            f'frictionloss="0.3" armature="0.05"/>{drawer_geoms}'
            f'<body name="drawer_handle" pos="{hx:.4f} 0 {hz:.4f}">{handle_geoms}</body>'
            f"</body></body>"
        )
        placer = Placer(rng, ws)
        placer.reserve(centre, float(np.hypot(d, w)))
        placer.reserve(base_xy + r_handle * u, 0.06)
        d_bodies, d_assets, d_names = add_distractors(
            rng, placer, int(rng.integers(0, 2)), (self._handle_colour(seed),), z0
        )
        env = sample_environment(rng)
        return SceneSpec(
            rig=self.rig,
            worldbody_xml="\n".join([xml] + d_bodies),
            asset_xml="\n".join([cab.xml(), front.xml(), handle.xml()] + d_assets),
            object_bodies=("cabinet", "drawer", "drawer_handle", *d_names),
            light_diffuse=env.light_diffuse,
            light_pos_m=env.light_pos_m,
            camera_jitter_m=env.camera_jitter_m,
            camera_jitter_rad=env.camera_jitter_rad,
            seed=int(seed),
        )

    def instruction(self, seed: int) -> str:
        return TEMPLATES[int(self.rng(seed, 2).integers(len(TEMPLATES)))].format(
            colour=self._handle_colour(seed)
        )

    def milestones(self, state: PrivilegedState) -> list[bool]:
        q = state.joint("drawer_slide", 0.0)
        goal = self.tolerances["open_m"]
        p = state.object("drawer_handle").position_m
        reached = any(
            np.linalg.norm(state.arm(a).tcp_position_m - p) <= REACH_M for a in state.arm_names
        )
        return [
            bool(reached),
            state.object("drawer_handle").held,
            q >= 0.2 * goal,
            q >= 0.5 * goal,
            q >= goal,
        ]

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        need = self.tolerances["open_m"] - self.tolerances["gate_slack_m"]
        # (a) the handle measured against the cabinet: its distance from the cabinet centre grows
        closed = DEPTH_M / 2 + STANDOFF_M
        rec = gate.latest(measurements, HANDLE, CABINET)
        if (
            rec is not None
            and "handle" in gate.object_text(rec)
            and "cabinet" in gate.destination_text(rec)
        ):
            dist = float(rec["destination"].get("distance_xy_m", 0.0))
            # no further than the slide allows: a cabinet measured metres away (a degenerate fit)
            # is no evidence of an opening; the handle's own movement, (b), still can be
            if need <= dist - closed <= TRAVEL_M + self.tolerances["gate_slack_m"]:
                return True, f"the handle is {(dist - closed) * 100:.1f} cm out of the cabinet"
        # (b) the handle measured before and after: it moved by the opening
        first, last = gate.first(measurements, HANDLE), gate.latest(measurements, HANDLE)
        if first is None or last is None or first is last:
            return False, (
                "measure the drawer handle with measure_object_geometry before and after "
                "pulling (or against the cabinet as destination) so the opening can be checked"
            )
        moved = float(
            np.linalg.norm(np.asarray(last["center_m"][:2]) - np.asarray(first["center_m"][:2]))
        )
        if moved < need:
            return False, (
                f"the handle moved {moved * 100:.1f} cm between your first and latest "
                f"measurements; the drawer must open at least {cm(self.tolerances['open_m'])}"
            )
        return True, f"the handle moved {moved * 100:.1f} cm: the drawer is open"

    def standard(self) -> list[str]:
        t = self.tolerances
        return [
            f"The drawer is pulled out at least {cm(t['open_m'])} from closed (of {cm(TRAVEL_M)} travel).",
            f"The completion gate checks your own measurements: the handle's centre must have moved at "
            f"least {cm(t['open_m'] - t['gate_slack_m'])} between your first and latest handle "
            "measurements (measure it before you pull).",
        ]
