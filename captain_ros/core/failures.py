"""The one mapping from exceptions raised below the robot API to failed :class:`Result` objects.

Motion, perception, the API dispatcher and the harness session all answer policy code with
structured failures, never exceptions; :func:`failure_from_exception` is the single place that
decides which category an exception becomes and what the message tells the policy to do, and
:func:`never_raises` wraps a capability method with it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from captain_ros.core.errors import (
    EStopError,
    HardwareError,
    InvalidArgumentError,
    NotSupportedError,
    UnknownNameError,
)
from captain_ros.core.result import FailureCategory, Result

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Result])

UNKNOWN_HINTS: Mapping[str, str] = {
    "observation handle": "call robot.observe() and use the handle it returns",
    "detection id": "use an id returned by segment, mark_point or track_target on a recent observation",
    "camera": "use one of the listed cameras",
    "arm": "use one of the listed arms",
    "frame": "use one of the listed frames",
}


def failure_from_exception(exc: BaseException, name: str, *, physical: bool = False) -> Result:
    """A failed Result for ``exc`` raised while serving capability ``name``.

    Args:
        exc: The exception. One that carries a ``failure_category`` (a
            :class:`FailureCategory`; e.g. a rejected motion plan) keeps it, its message and its
            ``diagnostics``.
        name: The capability (or operation) name, prefixed to messages that lack it.
        physical: The call could have moved the robot (an internal error then says that the
            robot holds its last target).
    """
    text = str(exc)
    prefix = "" if text.startswith((f"{name}:", f"{name} ")) else f"{name}: "
    category = getattr(exc, "failure_category", None)
    if isinstance(category, FailureCategory):
        diagnostics = dict(getattr(exc, "diagnostics", {}) or {})
        return Result.fail(
            category,
            f"{prefix}{text}",
            diagnostics=diagnostics,
            receipt=f"{name}: rejected ({category.value}), nothing moved",
        )
    if isinstance(exc, UnknownNameError):
        hint = UNKNOWN_HINTS.get(exc.kind, "use one of the listed names")
        return Result.fail(FailureCategory.UNKNOWN_ID, f"{prefix}{text}. Fix: {hint}.")
    if isinstance(exc, EStopError):
        return Result.fail(
            FailureCategory.ESTOP,
            f"{prefix}{text}; the emergency stop is latched and an operator must reset it",
        )
    if isinstance(exc, HardwareError):  # the operator's log gets the cause, no traceback
        log.warning("hardware fault in %s: %s", name, text)
        return Result.fail(
            FailureCategory.HARDWARE,
            f"{prefix}{text}. Retrying will not help: an operator must check the arm",
        )
    if isinstance(exc, NotSupportedError):
        return Result.fail(FailureCategory.NOT_SUPPORTED, f"{prefix}{text}")
    if isinstance(exc, (InvalidArgumentError, TypeError, ValueError)):
        return Result.fail(
            FailureCategory.INVALID_ARGUMENT,
            f"{prefix}{text}; nothing moved. Fix the argument (signatures are in TASK.md).",
        )
    log.exception("internal error in %s", name, exc_info=exc)
    return Result.fail(
        FailureCategory.INTERNAL_ERROR,
        f"{prefix}internal error ({type(exc).__name__}: {text[:160]}); it was logged"
        + (
            "; the robot holds its last target. Try another approach."
            if physical
            else ". Observe again and retry, or use mark_point."
        ),
    )


def never_raises(
    physical: bool = False, before: Callable[[Any], None] | None = None
) -> Callable[[F], F]:
    """Decorator for capability methods: any exception becomes :func:`failure_from_exception`.

    ``before(self)`` runs first inside the guard (e.g. the motion service's clock check)."""

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Result:
            try:
                if before is not None and args:
                    before(args[0])
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - robot calls never raise into policy code
                return failure_from_exception(exc, fn.__name__, physical=physical)

        return wrapper  # type: ignore[return-value]

    return deco
