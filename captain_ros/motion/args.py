"""Validation of untrusted motion arguments (raises InvalidArgumentError / UnknownNameError)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.geometry import as_vector, normalize_quat

MODES = ("guarded", "manipulation")


def number(value: Any, name: str, lo: float, hi: float, *, lo_open: bool = True) -> float:
    """A finite float in ``(lo, hi]`` (or ``[lo, hi]`` with ``lo_open=False``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v > hi or (v <= lo if lo_open else v < lo):
        bracket = "(" if lo_open else "["
        raise InvalidArgumentError(f"{name} must be in {bracket}{lo}, {hi}], got {value!r}")
    return v


def position(value: Any, name: str = "position") -> np.ndarray:
    if isinstance(value, (str, bytes, dict)):
        raise InvalidArgumentError(f"{name} must be 3 numbers [x, y, z] in metres, got {value!r}")
    return as_vector(value, 3, name)


def orientation(value: Any, name: str = "orientation") -> np.ndarray:
    if isinstance(value, (str, bytes, dict)):
        raise InvalidArgumentError(f"{name} must be a unit quaternion [w, x, y, z], got {value!r}")
    return normalize_quat(value, name)


def jaw(value: Any, max_opening_m: float) -> float:
    """``"open"`` -> full opening, ``"close"`` -> 0, else an opening in [0, max] metres."""
    if isinstance(value, str):
        if value == "open":
            return max_opening_m
        if value == "close":
            return 0.0
        raise InvalidArgumentError(
            f"jaw must be 'open', 'close' or an opening in metres, got {value!r}"
        )
    return number(value, "jaw", 0.0, max_opening_m + 1e-6, lo_open=False)


def mode(value: Any) -> str:
    if value not in MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)}, got {value!r}")
    return str(value)
