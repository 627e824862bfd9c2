"""The structured result every robot call returns, and the closed vocabulary of failures.

Policy code receives ``Result.to_dict()``-shaped objects: ``{success, executed, failure_category,
message, value, diagnostics, budget}`` plus a short text receipt that the harness appends to the
cell output. Robot calls never raise into policy code.
"""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

RECEIPT_MAX_CHARS = 300


class FailureCategory(enum.StrEnum):
    """Closed vocabulary of failure categories. Each value's doc says what the policy should do."""

    INVALID_ARGUMENT = "invalid_argument"
    """Wrong type, shape, NaN/inf or malformed quaternion. Fix the argument; nothing moved."""
    UNKNOWN_ID = "unknown_id"
    """Unknown arm, camera, observation handle, detection id or frame. Use one of the listed names."""
    UNREACHABLE = "unreachable"
    """IK found no solution within tolerance. Choose a pose closer to the robot or another orientation."""
    JOINT_LIMIT = "joint_limit"
    """The path would leave the joint limits. Approach from another direction."""
    COLLISION = "collision"
    """The path collides with the robot itself, the other arm, the table or the static scene."""
    WORKSPACE = "workspace"
    """The target is outside the safety workspace box. Choose a target inside the stated bounds."""
    CONTACT = "contact"
    """A guarded move stopped at first contact above the threshold. Inspect, then `recover` or re-plan."""
    FORCE_LIMIT = "force_limit"
    """The always-on emergency force limit tripped. Back out with `recover`."""
    ESTOP = "estop"
    """The emergency stop is latched. An operator must reset it; motion is refused until then."""
    HARDWARE = "hardware"
    """The robot hardware reported a fault (stale feedback, a disabled motor, a lost link); nothing
    was commanded. Retrying will not help: an operator must check the arm."""
    NOT_DETECTED = "not_detected"
    """Perception found nothing matching the prompt. Re-observe, rephrase, or use `mark_point`."""
    NO_DEPTH = "no_depth"
    """The chosen pixel has no valid depth. Pick a nearby pixel on the object."""
    PRECONDITION = "precondition"
    """The call needs a state that does not hold (e.g. `recover` with no prior motion, `release` with
    nothing held). Read the message for the missing precondition."""
    TIMEOUT = "timeout"
    """The call or cell ran past its time limit."""
    BUDGET_EXHAUSTED = "budget_exhausted"
    """A request, wall-time or physical-action budget is spent; the episode is ending."""
    GATE_REJECTED = "gate_rejected"
    """`finish()` was rejected by the completion gate. Verify with fresh measurements first."""
    NOT_SUPPORTED = "not_supported"
    """The backend does not support this call (e.g. snapshots on hardware)."""
    INTERNAL_ERROR = "internal_error"
    """An unexpected error below the API. It was logged; the robot is stopped and safe."""


def compact_json(value: Any) -> str:
    """Compact JSON of any Result payload (numpy and dataclasses converted, NaN -> null): the
    ``*_json`` fields of receipts on the graph and in bags."""
    return json.dumps(_jsonable(value), separators=(",", ":"), allow_nan=False)


def stamp_parts(stamp_s: float) -> tuple[int, int]:
    """``(sec, nanosec)`` of a non-negative time in seconds (``builtin_interfaces/Time``)."""
    stamp_s = max(0.0, float(stamp_s))
    sec = int(math.floor(stamp_s))
    return sec, min(int(round((stamp_s - sec) * 1e9)), 999_999_999)


def _jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays and dataclasses into JSON-serialisable Python values."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a core dependency
        np = None  # type: ignore[assignment]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, enum.Enum):
        return value.value
    if np is not None:
        if isinstance(value, np.ndarray):
            return _jsonable(value.tolist())
        if isinstance(value, np.generic):
            return _jsonable(value.item())
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return _jsonable(value.to_dict())
    if hasattr(value, "__dataclass_fields__"):
        return {k: _jsonable(getattr(value, k)) for k in value.__dataclass_fields__}
    return repr(value)


@dataclass(frozen=True)
class Result:
    """Outcome of one robot call.

    Attributes:
        success: The call did what was asked.
        executed: Something physical happened (the robot moved or the jaw changed), even if the
            call failed part-way (e.g. a guarded stop at contact).
        failure_category: ``None`` on success, else one of :class:`FailureCategory`.
        message: One human-readable sentence; on failure it says what to do next.
        value: The call's payload (JSON-serialisable).
        diagnostics: Extra numbers for debugging (JSON-serialisable).
        budget: Snapshot of the remaining budgets, filled in by the harness.
        receipt: At most 300 characters describing what physically happened.
    """

    success: bool
    executed: bool = False
    failure_category: FailureCategory | None = None
    message: str = ""
    value: Any = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    budget: dict[str, Any] = field(default_factory=dict)
    receipt: str = ""

    def __post_init__(self) -> None:
        if self.success and self.failure_category is not None:
            raise ValueError("a successful Result has no failure_category")
        if not self.success and self.failure_category is None:
            raise ValueError("a failed Result needs a failure_category")
        if len(self.receipt) > RECEIPT_MAX_CHARS:
            object.__setattr__(self, "receipt", self.receipt[: RECEIPT_MAX_CHARS - 3] + "...")

    @classmethod
    def ok(
        cls,
        message: str = "",
        value: Any = None,
        *,
        executed: bool = False,
        receipt: str = "",
        diagnostics: dict[str, Any] | None = None,
    ) -> Result:
        return cls(True, executed, None, message, value, diagnostics or {}, {}, receipt)

    @classmethod
    def fail(
        cls,
        category: FailureCategory,
        message: str,
        *,
        executed: bool = False,
        value: Any = None,
        receipt: str = "",
        diagnostics: dict[str, Any] | None = None,
    ) -> Result:
        return cls(
            False,
            executed,
            FailureCategory(category),
            message,
            value,
            diagnostics or {},
            {},
            receipt,
        )

    def with_budget(self, budget: dict[str, Any]) -> Result:
        return replace(self, budget=dict(budget))

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "executed": self.executed,
            "failure_category": self.failure_category.value if self.failure_category else None,
            "message": self.message,
            "value": _jsonable(self.value),
            "diagnostics": _jsonable(self.diagnostics),
            "budget": _jsonable(self.budget),
            "receipt": self.receipt,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        cat = data.get("failure_category")
        return cls(
            bool(data["success"]),
            bool(data.get("executed", False)),
            FailureCategory(cat) if cat else None,
            str(data.get("message", "")),
            data.get("value"),
            dict(data.get("diagnostics") or {}),
            dict(data.get("budget") or {}),
            str(data.get("receipt", "")),
        )
