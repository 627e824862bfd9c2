"""The completion gate: ``finish()`` is checked against the agent's own recorded measurements.

The gate never reads simulator state. It asks ``gate_check(measurements) -> (ok, reason)`` (the
task's :meth:`gate_check`) over the successful ``measure_object_geometry`` values the agent
recorded in this episode. It may reject twice with the reason; the third call is accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from captain_ros.core.result import FailureCategory, Result

GateCheck = Callable[[Sequence[dict[str, Any]]], tuple[bool, str]]


@dataclass(frozen=True)
class GateDecision:
    """One finish() call: accepted or not, why, and how many rejections preceded it."""

    call_index: int
    accepted: bool
    passed_check: bool
    reason: str
    summary: str
    measurements: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CompletionGate:
    """Stateful gate of one episode.

    Args:
        check: The task's gate predicate over recorded measurements.
        max_rejections: Rejections before a finish() is accepted regardless (paper: 2).
    """

    check: GateCheck
    max_rejections: int = 2
    measurements: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[GateDecision] = field(default_factory=list)

    @property
    def rejections(self) -> int:
        return sum(1 for d in self.decisions if not d.accepted)

    @property
    def accepted(self) -> bool:
        return any(d.accepted for d in self.decisions)

    def record(self, name: str, result: Result) -> None:
        """Keep the value of every successful measure_object_geometry call."""
        if name == "measure_object_geometry" and result.success and isinstance(result.value, dict):
            self.measurements.append(dict(result.value))

    def finish(self, summary: str = "") -> Result:
        """Decide one finish() call."""
        try:
            ok, reason = self.check(list(self.measurements))
            ok, reason = bool(ok), str(reason)
        except Exception as exc:  # noqa: BLE001 - a broken predicate must not crash the episode
            ok, reason = False, f"the gate check failed ({type(exc).__name__}: {exc})"
        accepted = ok or self.rejections >= self.max_rejections
        if ok:
            why = reason or "your measurements satisfy the task tolerances"
        elif accepted:
            why = f"accepted after {self.rejections} rejections although: {reason}"
        else:
            why = reason or "your recorded measurements do not show the goal"
        decision = GateDecision(
            len(self.decisions) + 1, accepted, ok, why, summary[:500], len(self.measurements)
        )
        self.decisions.append(decision)
        value = {"accepted": accepted, "reason": why, "rejections": self.rejections}
        if accepted:
            return Result.ok(
                f"finish() accepted: {why}", value, receipt=f"finish: ACCEPTED - {why}"[:300]
            )
        left = self.max_rejections - self.rejections + 1
        msg = (
            f"finish() rejected: {why}. Measure again with measure_object_geometry, fix the scene if "
            f"needed, then call finish() again ({left} more call(s) until it is accepted regardless)."
        )
        return Result.fail(
            FailureCategory.GATE_REJECTED,
            msg,
            value=value,
            receipt=f"finish: REJECTED - {why}"[:300],
        )
