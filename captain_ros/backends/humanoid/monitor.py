"""The pair's running safety monitor: extremes since the last reset, sampled every control tick.

The monitor holds the largest payload tilt, the lowest point of the payload, each robot's largest
torso tilt, each robot's smallest total palm force, every environment contact seen and the number
of samples. It is a plain dict (it goes into the privileged state and the snapshots as is);
:class:`~captain_ros.backends.humanoid.sim.MujocoHumanoidPair` keeps one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import mujoco

from captain_ros.backends.humanoid import measure

__all__ = ["copy_monitor", "new_monitor", "update_monitor"]


def new_monitor(robots: Iterable[str]) -> dict[str, Any]:
    """A monitor with nothing sampled yet."""
    names = list(robots)
    return {
        "max_payload_tilt_rad": 0.0,
        "min_payload_lowest_z_m": math.inf,
        "max_robot_tilt_rad": {r: 0.0 for r in names},
        "environment_contacts": [],
        "min_palm_force_n": {r: math.inf for r in names},
        "samples": 0,
    }


def update_monitor(
    mon: dict[str, Any], model: mujoco.MjModel, data: mujoco.MjData, idx: measure.SceneIndex
) -> None:
    """Sample the current state into ``mon``."""
    pos, _, rot = measure.payload_pose(data, idx)
    mon["max_payload_tilt_rad"] = max(mon["max_payload_tilt_rad"], measure.tilt_rad(rot))
    mon["min_payload_lowest_z_m"] = min(mon["min_payload_lowest_z_m"], measure.lowest_z_m(pos, rot))
    cs = measure.contacts(model, data, idx)
    for r, ri in idx.robots.items():
        mon["max_robot_tilt_rad"][r] = max(
            mon["max_robot_tilt_rad"][r], measure.robot_tilt_rad(data, ri)
        )
        mon["min_palm_force_n"][r] = min(mon["min_palm_force_n"][r], sum(cs.palm_force_n[r]))
    seen = set(mon["environment_contacts"])
    mon["environment_contacts"] = sorted(seen | set(cs.environment))
    mon["samples"] += 1


def copy_monitor(mon: Mapping[str, Any]) -> dict[str, Any]:
    """A copy that shares no dict or list with ``mon``."""
    return {
        k: (dict(v) if isinstance(v, dict) else (list(v) if isinstance(v, list) else v))
        for k, v in mon.items()
    }
