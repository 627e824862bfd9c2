"""Turn exceptions raised inside perception into structured failures (calls never raise)."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import Any, TypeVar

from captain_ros.core.errors import (
    EStopError,
    InvalidArgumentError,
    NotSupportedError,
    UnknownNameError,
)
from captain_ros.core.result import FailureCategory, Result

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Result])

_HINTS = {
    "observation handle": "call robot.observe() and use the handle it returns",
    "detection id": "use an id returned by segment, mark_point or track_target on a recent observation",
    "camera": "use one of the listed cameras",
    "arm": "use one of the listed arms",
    "frame": "use one of the listed frames",
}


def guarded(fn: F) -> F:
    """Decorator: map UnknownNameError -> unknown_id, InvalidArgumentError -> invalid_argument,
    NotSupportedError -> not_supported, anything else -> internal_error."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Result:
        try:
            return fn(*args, **kwargs)
        except UnknownNameError as exc:
            hint = _HINTS.get(exc.kind, "use one of the listed names")
            return Result.fail(FailureCategory.UNKNOWN_ID, f"{exc}. Fix: {hint}.")
        except InvalidArgumentError as exc:
            return Result.fail(FailureCategory.INVALID_ARGUMENT, f"{exc}. Fix the argument.")
        except NotSupportedError as exc:
            return Result.fail(FailureCategory.NOT_SUPPORTED, str(exc))
        except EStopError as exc:
            return Result.fail(FailureCategory.ESTOP, f"{exc}. An operator must reset the e-stop.")
        except (TypeError, ValueError) as exc:
            return Result.fail(FailureCategory.INVALID_ARGUMENT,
                               f"{fn.__name__}: bad argument ({exc}). Check the signature in TASK.md.")
        except Exception as exc:  # noqa: BLE001 - robot calls never raise into policy code
            log.exception("perception call %s failed", fn.__name__)
            return Result.fail(FailureCategory.INTERNAL_ERROR,
                               f"{fn.__name__} failed internally ({type(exc).__name__}: {exc}); "
                               "observe again and retry, or use mark_point.")

    return wrapper  # type: ignore[return-value]


def finite_number(value: Any, name: str) -> float:
    """A finite float, or InvalidArgumentError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
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
