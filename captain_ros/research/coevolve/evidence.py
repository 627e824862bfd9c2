"""The verifier's structured evidence: one :class:`Check` per measured quantity (value, limit,
level), the :class:`Evidence` of a transaction (verdict, completed phases, certified milestones,
measurements), the :data:`LEVELS` a failed check is classified by, and the :class:`Tolerances`.

:class:`captain_ros.research.coevolve.verifier.Verifier` produces it (these names are also
importable from there); the roles read it back in the next prompt, memory keeps it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

LEVELS = ("drop", "robot", "contact", "support", "stability", "phase", "progress")


@dataclass(frozen=True)
class Tolerances:
    """Verifier limits (the task's success criteria and the carrying tolerances).

    Attributes:
        target_radius_m: Target support radius (paper: 0.30 m).
        vertical_tol_m: Payload-centre vertical tolerance at the target (paper: 0.08 m).
        terminal_tilt_rad: Tilt tolerance on the target (paper: 20 degrees).
        window_s: Stability window after release (paper: 3 s).
        retreat_clearance_m: Robot-target clearance after retreat (base distance to the payload
            centre beyond the carrying distance) [m].
        carry_tilt_rad / final_tilt_rad: Largest payload tilt during / at the end of a carrying
            transaction [rad].
        spacing_tol_m / facing_tol_rad: Formation tolerance of the palm cradle.
        robot_tilt_rad: Largest torso tilt [rad].
        support_force_n: Palm force that counts as supporting [N].
    """

    target_radius_m: float = 0.30
    vertical_tol_m: float = 0.08
    terminal_tilt_rad: float = math.radians(20.0)
    window_s: float = 3.0
    retreat_clearance_m: float = 0.20
    carry_tilt_rad: float = math.radians(12.0)
    final_tilt_rad: float = math.radians(5.0)
    spacing_tol_m: float = 0.09
    facing_tol_rad: float = 0.25
    robot_tilt_rad: float = 0.15
    support_force_n: float = 2.0


@dataclass(frozen=True)
class Check:
    """One measured check."""

    name: str
    ok: bool
    level: str
    value: Any = None
    limit: Any = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Evidence:
    """The verifier's structured evidence ``E_t``.

    Attributes:
        accepted: All checks passed.
        checks: Every check with value and limit.
        failure_type / failure_level / culprit: The first failed check (by severity), its level and
            who caused it (a robot, with its role, or the payload).
        summary: One or two sentences for the next prompt.
        completed_phases: Plan phases whose completion evidence holds (accepted only).
        certified: Milestones newly certified (accepted only).
        setup_only: Accepted without completing a phase.
        measurements: Key numbers before/after (route progress, errors, clipped commands).
    """

    accepted: bool
    checks: tuple[Check, ...]
    failure_type: str = ""
    failure_level: str = ""
    culprit: str = ""
    summary: str = ""
    completed_phases: tuple[str, ...] = ()
    certified: tuple[str, ...] = ()
    setup_only: bool = False
    measurements: dict[str, Any] = field(default_factory=dict)

    @property
    def dropped(self) -> bool:
        return self.failure_type == "payload_drop"

    def to_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "failure_type": self.failure_type,
            "failure_level": self.failure_level,
            "culprit": self.culprit,
            "summary": self.summary,
            "completed_phases": list(self.completed_phases),
            "certified": list(self.certified),
            "setup_only": self.setup_only,
            "measurements": self.measurements,
            "checks": [c.to_dict() for c in self.checks],
        }
