"""Validation of untrusted capability arguments against the registry's parameter kinds.

Policy code is untrusted: every value is checked for type, shape, finiteness and magnitude before a
service sees it, so that no work proportional to a value starts before the value is known to be
sane. :func:`validate_call` returns the normalised keyword arguments (defaults filled in) or raises
:class:`~captain_ros.core.errors.InvalidArgumentError` with a message that says what to fix. A value
whose conversion itself misbehaves (an object whose ``__float__``, ``__index__``, ``__len__`` or
``tolist`` raises) is an invalid argument too, never an internal error. Text must be printable:
lone surrogates (which cannot be encoded as UTF-8, hence cannot be logged, recorded or sent over
ROS) and control characters other than tab and newline are refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from captain_ros.api.registry import Capability, Param
from captain_ros.core.errors import CaptainError, InvalidArgumentError, UnknownNameError

_MAX_LIST = 256
_MAX_STR = 2000
MAX_POSITION_M = 100.0
"""Largest coordinate of a position [m]: no rig reaches further; larger values are mistakes."""
MAX_NUMBER = 1e6
"""Largest magnitude of any other number (pixels, metres, seconds, newtons)."""
MAX_INT = 10**9
_TEXT_OK = frozenset("\t\n")


def _text(value: str, name: str) -> str:
    """``value`` when it is printable text (no lone surrogates, no control characters)."""
    if value.isprintable():
        return value
    for i, ch in enumerate(value):
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            raise InvalidArgumentError(
                f"{name} has a lone surrogate {ch!r} at index {i}; pass valid text"
            )
        if (code < 0x20 or 0x7F <= code < 0xA0) and ch not in _TEXT_OK:
            raise InvalidArgumentError(
                f"{name} has the control character {ch!r} at index {i}; pass plain text"
            )
    return value


def _float(value: Any, name: str, limit: float = MAX_NUMBER) -> float:
    if isinstance(value, (bool, str, bytes)) or not hasattr(value, "__float__"):
        raise InvalidArgumentError(f"{name} must be a number, got {type(value).__name__}")
    try:
        out = float(value)
    except Exception:  # noqa: BLE001 - a misbehaving __float__ is the caller's error
        raise InvalidArgumentError(
            f"{name} must be a number (converting a {type(value).__name__} failed)"
        ) from None
    if not math.isfinite(out):
        raise InvalidArgumentError(f"{name} must be finite, got {out}")
    if abs(out) > limit:
        raise InvalidArgumentError(f"{name} = {out:.6g} is out of range (|value| <= {limit:g})")
    return out


def _vector(value: Any, size: int, name: str, limit: float = MAX_NUMBER) -> list[float]:
    if (
        isinstance(value, (str, bytes, Mapping))
        or not isinstance(value, Sequence)
        and not hasattr(value, "tolist")
    ):
        raise InvalidArgumentError(
            f"{name} must be a list of {size} numbers, got {type(value).__name__}"
        )
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, Sequence) or len(value) != size:
        got = f"{len(value)} items" if isinstance(value, Sequence) else type(value).__name__
        raise InvalidArgumentError(f"{name} must have exactly {size} numbers, got {got}")
    return [_float(v, f"{name}[{i}]", limit) for i, v in enumerate(value)]


def _check_param(p: Param, value: Any) -> Any:
    if value is None:
        if p.nullable or (not p.required and p.default is None):
            return None
        raise InvalidArgumentError(f"{p.name} may not be None ({p.doc})")
    kind = p.kind
    if kind == "position":
        return _vector(value, 3, p.name, MAX_POSITION_M)
    if kind == "quat":
        q = _vector(value, 4, p.name)
        norm = math.sqrt(sum(v * v for v in q))
        if abs(norm - 1.0) > 1e-3:
            raise InvalidArgumentError(
                f"{p.name} must be a unit quaternion [w, x, y, z]; its norm is {norm:.4f}"
            )
        return [v / norm for v in q]
    if kind == "float":
        return _float(value, p.name)
    if kind == "pos_float":
        out = _float(value, p.name)
        if out <= 0:
            raise InvalidArgumentError(f"{p.name} must be > 0, got {out}")
        return out
    if kind == "int":
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (isinstance(value, float) and not value.is_integer())
        ):
            raise InvalidArgumentError(f"{p.name} must be an integer, got {type(value).__name__}")
        if abs(value) > MAX_INT:
            raise InvalidArgumentError(f"{p.name} is out of range (|value| <= {MAX_INT})")
        return int(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise InvalidArgumentError(f"{p.name} must be True or False, got {value!r:.60}")
        return value
    if kind in ("str", "arm"):
        if not isinstance(value, str):
            raise InvalidArgumentError(f"{p.name} must be a string, got {type(value).__name__}")
        if len(value) > _MAX_STR:
            raise InvalidArgumentError(f"{p.name} is longer than {_MAX_STR} characters")
        if p.choices and value not in p.choices:
            raise InvalidArgumentError(
                f"{p.name} must be one of {', '.join(p.choices)}; got {value!r:.60}"
            )
        return _text(value, p.name)
    if kind == "jaw":
        if isinstance(value, str):
            if value not in ("open", "close"):
                raise InvalidArgumentError(
                    f"{p.name} must be an opening in metres or 'open'/'close', got {value!r:.60}"
                )
            return value
        out = _float(value, p.name)
        if out < 0:
            raise InvalidArgumentError(f"{p.name} opening must be >= 0 m, got {out}")
        return out
    if kind == "str_list":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, Sequence) or len(value) > _MAX_LIST:
            raise InvalidArgumentError(f"{p.name} must be a list of strings (at most {_MAX_LIST})")
        items: list[str] = []
        for v in value:
            if isinstance(v, Mapping) and isinstance(v.get("id"), str):
                v = v["id"]
            if not isinstance(v, str) or len(v) > _MAX_STR:
                raise InvalidArgumentError(
                    f"{p.name} must contain strings (at most {_MAX_STR} characters), "
                    f"got {type(v).__name__}"
                )
            items.append(_text(v, p.name))
        return items
    if kind == "points":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) or not value:
            raise InvalidArgumentError(f"{p.name} must be a non-empty list of [u, v] pixel pairs")
        if len(value) > _MAX_LIST:
            raise InvalidArgumentError(f"{p.name} has more than {_MAX_LIST} points")
        return [_vector(v, 2, f"{p.name}[{i}]") for i, v in enumerate(value)]
    if kind == "obj":
        if isinstance(value, Mapping):
            value = value.get("id", value.get("object_id"))
        if not isinstance(value, str) or not value or len(value) > 200:
            raise InvalidArgumentError(
                f"{p.name} must be a detection id string like 'det_3' (or a detection dict)"
            )
        return _text(value, p.name)
    raise InvalidArgumentError(f"{p.name}: unsupported kind {kind}")  # pragma: no cover


def _checked(p: Param, value: Any) -> Any:
    """:func:`_check_param`, with any failure of the value's own methods (``__len__``,
    ``__iter__``, ``tolist``, deep recursion) reported as an invalid argument."""
    try:
        return _check_param(p, value)
    except CaptainError:
        raise
    except Exception as exc:  # noqa: BLE001 - hostile objects: the caller's error, not ours
        raise InvalidArgumentError(
            f"{p.name} could not be read ({type(exc).__name__} in a "
            f"{type(value).__name__}); pass plain numbers, lists and strings"
        ) from None


def validate_call(
    cap: Capability, kwargs: Mapping[str, Any], arm_names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Check ``kwargs`` against ``cap``; return them with defaults filled in.

    Raises:
        InvalidArgumentError: unknown or missing parameter, wrong type/shape, NaN/inf, bad choice.
        UnknownNameError: an ``arm`` that the rig does not have (lists valid arms).
    """
    if not isinstance(kwargs, Mapping):
        raise InvalidArgumentError(f"{cap.name}: arguments must be keyword arguments")
    names = {p.name for p in cap.params}
    surplus = kwargs.get("*args")
    if surplus is not None:
        n = len(surplus) if isinstance(surplus, list) else 1
        raise InvalidArgumentError(
            f"{cap.name}() takes {len(cap.params)} arguments, {len(cap.params) + n} were given; "
            f"signature: {cap.signature()}"
        )
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        shown = ", ".join(f"{k!r:.40}" for k in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise InvalidArgumentError(
            f"{cap.name}() got unexpected argument(s) {shown}; signature: {cap.signature()}"
        )
    out: dict[str, Any] = {}
    both = cap.name == "move_to" and kwargs.get("arm") == "both"
    for p in cap.params:
        if (
            both
            and p.name in ("position", "orientation")
            and isinstance(kwargs.get(p.name), Mapping)
        ):
            # dual rig, two-arm move: one pose per arm {"left": ..., "right": ...}
            per_arm = kwargs[p.name]
            if len(per_arm) > 4 or not all(isinstance(k, str) for k in per_arm):
                raise InvalidArgumentError(f"{p.name} with arm='both' must map arm names to values")
            out[p.name] = {k: _checked(p, v) for k, v in per_arm.items()}
        elif p.name in kwargs:
            out[p.name] = _checked(p, kwargs[p.name])
        elif p.required:
            raise InvalidArgumentError(
                f"{cap.name}() is missing {p.name!r} ({p.doc}); signature: {cap.signature()}"
            )
        else:
            out[p.name] = p.default
    if cap.name == "move_to":
        has_pose = out.get("position") is not None or out.get("orientation") is not None
        if has_pose and out.get("jaw") is not None:
            raise InvalidArgumentError(
                "move_to takes a pose OR a jaw command, never both; make two calls"
            )
        if not has_pose and out.get("jaw") is None:
            raise InvalidArgumentError("move_to needs a position/orientation or a jaw command")
    if both:
        if arm_names is not None and len(arm_names) < 2:
            raise UnknownNameError("arm", "both", list(arm_names))
        if not isinstance(out.get("position"), dict):
            raise InvalidArgumentError(
                "arm='both' needs position={'left': [x, y, z], 'right': [x, y, z]}"
            )
        unknown = [a for a in out["position"] if arm_names is not None and a not in arm_names]
        if unknown:
            raise UnknownNameError("arm", unknown[0], list(arm_names or ()))
    elif arm_names is not None and out.get("arm") is not None and out["arm"] not in arm_names:
        raise UnknownNameError("arm", out["arm"], list(arm_names))
    return out
