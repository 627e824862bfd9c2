"""The deadline of each robot call, derived from its (validated) arguments.

:class:`~captain_ros.api.service.RobotService` runs every call inside
:func:`captain_ros.core.deadline.scope` with :func:`call_deadline_s`; the motion layer checks it at
every planning step and control tick, so neither a long plan nor a long motion outlives it (a
motion cut short reports ``timeout`` with ``executed=True``; a plan cut short reports ``timeout``
with nothing moved). Calls without such loops (perception, state) are bounded by their own
implementations; their deadline is checked before they start.

A deadline is an allowance for planning and inference (:data:`ALLOWANCE_S` by group) plus, for
calls that move, :data:`REALTIME_FACTOR` wall seconds per second of motion that the arguments ask
for (``duration_s`` of a move or hold; the longest sweep the motion layer accepts when the
duration follows from the distance; the jaw's timeout; ``recover``'s distance at its speed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from captain_ros.api.registry import Capability
from captain_ros.motion.path import MAX_STRETCHED_SWEEP_S

ALLOWANCE_S: Mapping[str, float] = {
    "perception": 120.0,
    "measurement": 60.0,
    "planning": 60.0,
    "state": 30.0,
    "motion": 60.0,
    "completion": 30.0,
}
"""Planning / inference time a call of each group may take besides its motion [s]."""
REALTIME_FACTOR = 3.0
"""Wall seconds allowed per second of motion (a simulator may run slower than real time)."""
JAW_S = 1.5
"""Longest jaw command [s] (the motion layer's ``captain_ros.motion.jaw.JAW_TIMEOUT_S``)."""
RECOVER_SPEED_M_S = 0.05


def motion_s(cap: Capability, args: Mapping[str, Any]) -> float:
    """Seconds of motion that a call with validated ``args`` may command."""
    name = cap.name
    if name == "move_to":
        if args.get("position") is None and args.get("orientation") is None:
            return JAW_S
        return float(args.get("duration_s") or MAX_STRETCHED_SWEEP_S)
    if name == "hold":
        return float(args.get("duration_s") or 1.0)
    if name == "recover":
        return float(args.get("distance_m") or 0.05) / RECOVER_SPEED_M_S
    if name == "release":
        return JAW_S
    return 0.0


def call_deadline_s(cap: Capability, args: Mapping[str, Any]) -> float:
    """Wall time [s] a call of ``cap`` with validated ``args`` may take."""
    return ALLOWANCE_S.get(cap.group, 60.0) + REALTIME_FACTOR * motion_s(cap, args)
