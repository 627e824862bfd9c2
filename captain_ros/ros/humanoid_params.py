"""The humanoid controller node's parameters and interface prefix
(:mod:`captain_ros.ros.humanoid_node`)."""

from __future__ import annotations

from captain_ros.ros.params import Param

PARAMS = (
    Param("layout", "base", "Corridor layout of the scene.", choices=("base", "l2", "l3", "l4")),
    Param("seed", 1000, "Seed of the locomotion tracking errors.", min_value=0),
    Param("noise", 1.0, "Scale of the locomotion tracking errors (0 = ideal).", 0.0, 5.0),
    Param(
        "real_time_factor",
        1.0,
        "Simulated seconds per wall second of the control timer.",
        0.1,
        20.0,
    ),
    Param(
        "state_rate_hz", 20.0, "Rate of /captain/humanoid/state and /joint_states [Hz].", 1.0, 200.0
    ),
)
PREFIX = "/captain/humanoid"
