"""The robosuite backend's privileged state in its table-top world frame.

The MuJoCo backend's reader (:func:`captain_ros.backends.mujoco.privileged.privileged_state`)
builds the state in robosuite's world; :func:`in_table_frame` moves every position down by the
table height (the backend's world origin), puts in the tool frame and the Panda's jaw opening
(its two fingers move in opposite directions), and adds robosuite's own success check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from captain_ros.core.geometry import Pose
from captain_ros.core.privileged import PrivilegedState


def in_table_frame(
    state: PrivilegedState,
    origin_m: np.ndarray,
    tools: Mapping[str, Pose],
    jaws_m: Mapping[str, float],
    checks: Mapping[str, bool],
) -> PrivilegedState:
    """``state`` (robosuite's world) with positions relative to ``origin_m``; ``tools``: the
    arms' tool poses already in the table frame; ``jaws_m``: their jaw openings [m]."""
    o = np.asarray(origin_m, dtype=float)
    arms = {
        n: dataclasses.replace(
            t,
            jaw_opening_m=float(jaws_m[n]),
            tcp_position_m=tools[n].position_m,
            tcp_quat_wxyz=tools[n].quat_wxyz,
        )
        for n, t in state.arms.items()
    }
    objects = {
        n: dataclasses.replace(
            t,
            position_m=t.position_m - o,
            initial_position_m=(None if t.initial_position_m is None else t.initial_position_m - o),
        )
        for n, t in state.objects.items()
    }
    bodies = {
        n: dataclasses.replace(b, position_m=b.position_m - o) for n, b in state.bodies.items()
    }
    return dataclasses.replace(
        state, arms=arms, objects=objects, bodies=bodies, checks=dict(checks)
    )
