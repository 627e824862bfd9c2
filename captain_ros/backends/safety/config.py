"""Limits of the safety layer (:class:`~captain_ros.backends.safety.SafeBackend`), SI units.

One :class:`SafetyConfig` per rig. The simulation default (:data:`SIM_DEFAULTS`) keeps MuJoCo and
the kinematic fake exactly as they behave without the layer: its joint position/velocity limits
are the spec's (the same the simulator applies), the acceleration, force and effort limits and the
watchdog are off (the simulator's own 80 N emergency stop acts). Hardware configs
(``config/piper.yaml``, ``config/xr1.yaml``) set every guard.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from captain_ros.core.errors import InvalidArgumentError


@dataclass(frozen=True)
class SafetyConfig:
    """Guards applied below the API on every backend.

    Attributes:
        workspace_margin_m: The tool point may leave the spec's workspace box by at most this [m]
            (the planner already keeps goals inside the box; this catches a bad command).
        velocity_scale: Fraction (0, 1] of the spec's joint velocity limits allowed per tick.
        max_accel_rad_s2: Joint acceleration limit [rad/s^2] (``inf``: off).
        max_contact_force_n: Measured contact force that latches the e-stop [N] (``inf``: off).
        max_effort_nm: Absolute joint effort (motor torque from current) that latches the
            e-stop [N m] (``inf``: off).
        watchdog_s: Stop the arm when no command arrived for this long while it was moving [s]
            (``0``: off; only meaningful on a real-time backend).
        max_feedback_age_s: Feedback older than this is stale [s]: motion is refused, and the
            e-stop latches when a move was under way.
        twin_tolerance_m: Largest allowed distance between the kinematic twin's flange at the
            measured joints and the arm's own reported pose, checked before enabling [m].
        twin_tolerance_rad: Largest allowed disagreement between two joint measurements (joint
            feedback vs motor encoders) checked before enabling [rad].
    """

    workspace_margin_m: float = 0.02
    velocity_scale: float = 1.0
    max_accel_rad_s2: float = math.inf
    max_contact_force_n: float = math.inf
    max_effort_nm: float = math.inf
    watchdog_s: float = 0.0
    max_feedback_age_s: float = 0.1
    twin_tolerance_m: float = 0.005
    twin_tolerance_rad: float = 0.02

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
                raise InvalidArgumentError(f"safety.{f.name} must be a number, got {v!r}")
            object.__setattr__(self, f.name, float(v))
        if not 0.0 < self.velocity_scale <= 1.0:
            raise InvalidArgumentError("safety.velocity_scale must be in (0, 1]")
        for name in ("workspace_margin_m", "watchdog_s"):
            if getattr(self, name) < 0:
                raise InvalidArgumentError(f"safety.{name} must be >= 0")
        for name in (
            "max_accel_rad_s2",
            "max_contact_force_n",
            "max_effort_nm",
            "max_feedback_age_s",
            "twin_tolerance_m",
            "twin_tolerance_rad",
        ):
            if not getattr(self, name) > 0:
                raise InvalidArgumentError(f"safety.{name} must be positive")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> SafetyConfig:
        """Build from a config mapping; an unknown key is an error that lists the valid keys."""
        data = dict(data or {})
        valid = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(valid))
        if unknown:
            raise InvalidArgumentError(
                f"unknown safety key(s) {', '.join(unknown)}; valid: {', '.join(valid)}"
            )
        return cls(**{k: (math.inf if v in ("inf", None) else v) for k, v in data.items()})


SIM_DEFAULTS = SafetyConfig()
