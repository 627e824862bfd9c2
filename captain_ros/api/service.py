"""RobotService: the in-process executor of robot calls.

``RobotService(backend, motion, perception)`` binds every capability of the registry to the
method of the same name on the service objects it is given (the declared owner first, then the
others), and executes a call ``(name, kwargs)``: validate the untrusted arguments, dispatch, turn
any exception into a :class:`~captain_ros.core.result.Result` failure, make sure there is a
receipt. It never raises. Each call runs under a deadline derived from its arguments
(:mod:`captain_ros.api.deadlines`), inside any deadline the caller opened (the episode's wall
budget). Anything with ``call(name, kwargs) -> Result`` (e.g. a ROS-service
client) can stand in for it in the harness: see :class:`RobotCaller`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from captain_ros.api import registry
from captain_ros.api.deadlines import call_deadline_s
from captain_ros.api.validation import validate_call
from captain_ros.core import deadline
from captain_ros.core.failures import failure_from_exception
from captain_ros.core.result import RECEIPT_MAX_CHARS, FailureCategory, Result

log = logging.getLogger(__name__)


@runtime_checkable
class RobotCaller(Protocol):
    """Executes robot calls for the harness. Implementations never raise."""

    def call(self, name: str, kwargs: dict[str, Any]) -> Result:
        """Run capability ``name`` with keyword arguments ``kwargs``."""

    def image(self, handle: str, camera: str) -> np.ndarray | None:
        """RGB image (H, W, 3) uint8 of an observation, or None when unknown."""


def default_receipt(name: str, result: Result) -> str:
    """A receipt for a call whose implementation gave none."""
    if result.success:
        text = f"{name}: ok" + (f" - {result.message}" if result.message else "")
    else:
        cat = result.failure_category.value if result.failure_category else "failed"
        text = f"{name}: FAILED {cat} - {result.message}"
    return text if len(text) <= RECEIPT_MAX_CHARS else text[: RECEIPT_MAX_CHARS - 3] + "..."


def exception_to_result(name: str, exc: BaseException) -> Result:
    """Map an exception raised below the API to a failure Result (the one shared mapping)."""
    cap = registry.CAPABILITY_BY_NAME.get(name)
    return failure_from_exception(exc, name, physical=bool(cap and cap.physical))


class RobotService:
    """Dispatches validated capability calls to bound service methods.

    Args:
        backend: The rig; used for arm names (validation) and ``robot_geometry`` fallbacks.
        motion: Object implementing the motion capabilities (e.g. ``MotionService``).
        perception: Object implementing perception/measurement/state (e.g. ``PerceptionService``).
        extra: Further service objects searched by method name after the two above.
        finish_handler: Callable for ``finish(summary)``; the harness installs its gate here.
    """

    def __init__(
        self,
        backend: Any,
        motion: Any = None,
        perception: Any = None,
        extra: tuple[Any, ...] = (),
        finish_handler: Callable[..., Result] | None = None,
    ) -> None:
        self.backend = backend
        self.motion = motion
        self.perception = perception
        self.finish_handler = finish_handler
        owners = {"motion": motion, "perception": perception}
        self._bound: dict[str, Callable[..., Any]] = {}
        for cap in registry.CAPABILITIES:
            if cap.service == "harness":
                continue
            candidates = [owners.get(cap.service)] + [s for s in (motion, perception, *extra)]
            for svc in candidates:
                fn = getattr(svc, cap.name, None) if svc is not None else None
                if callable(fn):
                    self._bound[cap.name] = fn
                    break
        self.call_count = 0
        self.busy_s = 0.0

    @property
    def bound(self) -> tuple[str, ...]:
        """Names of capabilities that have an implementation."""
        return tuple(sorted(self._bound))

    def _arm_names(self) -> tuple[str, ...] | None:
        try:
            return tuple(self.backend.spec.arm_names)
        except Exception:  # noqa: BLE001 - a backend without a spec skips arm validation
            return None

    def call(self, name: str, kwargs: Mapping[str, Any] | None = None) -> Result:
        """Execute ``name(**kwargs)``. Never raises; always returns a Result with a receipt."""
        t0 = time.perf_counter()
        self.call_count += 1
        try:
            args = {} if kwargs is None else dict(kwargs) if isinstance(kwargs, Mapping) else kwargs
            result = self._call(name, args)
        except BaseException as exc:  # noqa: BLE001 - nothing may escape to policy code
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            result = exception_to_result(str(name), exc)
        if not isinstance(result, Result):
            result = Result.fail(
                FailureCategory.INTERNAL_ERROR,
                f"{name}: implementation returned {type(result).__name__}, not a Result",
            )
        if not result.receipt:
            from dataclasses import replace

            result = replace(result, receipt=default_receipt(str(name), result))
        self.busy_s += time.perf_counter() - t0
        return result

    def _call(self, name: Any, kwargs: Any) -> Result:
        if not isinstance(name, str) or name not in registry.CAPABILITY_BY_NAME:
            return Result.fail(
                FailureCategory.UNKNOWN_ID,
                f"unknown capability {str(name)[:60]!r}; valid: "
                + ", ".join(c.name for c in registry.CAPABILITIES),
            )
        cap = registry.CAPABILITY_BY_NAME[name]
        args = validate_call(cap, kwargs, self._arm_names())
        if cap.service == "harness":
            if self.finish_handler is None:
                return Result.fail(
                    FailureCategory.NOT_SUPPORTED,
                    "finish() is handled by the episode harness, which is not attached",
                )
            return self.finish_handler(**args)
        fn = self._bound.get(name)
        if fn is None:
            return Result.fail(
                FailureCategory.NOT_SUPPORTED,
                f"{name} is not available on this rig (no {cap.service} service bound)",
            )
        limit_s = call_deadline_s(cap, args)
        with deadline.scope(limit_s, f"{name}'s {limit_s:.0f} s deadline"):
            deadline.check("waiting to start")
            return fn(**args)

    def image(self, handle: str, camera: str) -> np.ndarray | None:
        """RGB image of an observation from the perception service (None when unavailable)."""
        fn = getattr(self.perception, "image", None)
        if not callable(fn):
            return None
        try:
            img = fn(handle, camera)
        except Exception:  # noqa: BLE001
            return None
        if not isinstance(img, np.ndarray) or img.ndim != 3 or img.shape[2] != 3:
            return None
        return img.astype(np.uint8, copy=False)
