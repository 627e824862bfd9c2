"""Turn exceptions raised inside perception into structured failures (calls never raise)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.failures import never_raises
from captain_ros.core.result import Result

F = TypeVar("F", bound=Callable[..., Result])


def guarded(fn: F) -> F:
    """Decorator of perception calls: exceptions become failed Results
    (:func:`captain_ros.core.failures.failure_from_exception`)."""
    return never_raises(physical=False)(fn)


def finite_number(value: Any, name: str) -> float:
    """A finite float, or InvalidArgumentError."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        and not hasattr(value, "__float__")
    ):
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}") from exc
    if not math.isfinite(x):
        raise InvalidArgumentError(f"{name} must be finite, got {value!r}")
    return x


def fmt(v: Any, nd: int = 3) -> str:
    """Compact vector formatting for receipts: ``(0.512, -0.104, 0.011)``."""
    return "(" + ", ".join(f"{float(x):.{nd}f}" for x in v) + ")"
