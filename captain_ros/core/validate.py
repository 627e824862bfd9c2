"""Field checks of the typed, frozen configuration dataclasses (the episode's groups): a value
of the wrong type, out of range or not among the choices is one :class:`InvalidArgumentError`
naming ``section.field``."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Union, get_args, get_origin, get_type_hints

from captain_ros.core.errors import InvalidArgumentError


def _is(value: Any, kind: Any) -> bool:
    if kind is type(None):
        return value is None
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    origin = get_origin(kind)
    if origin is not None and origin is not Union:
        return isinstance(value, origin)
    return isinstance(value, kind)


def check_types(obj: Any, section: str) -> None:
    """Refuse a field whose value is not of its annotated type (``int`` is no ``bool``; an
    ``int`` is a ``float``, stored as one)."""
    hints = get_type_hints(type(obj))
    for f in fields(obj):
        value, kind = getattr(obj, f.name), hints[f.name]
        kinds = get_args(kind) if get_origin(kind) in (Union, type(int | None)) else (kind,)
        if not any(_is(value, k) for k in kinds):
            want = " or ".join(getattr(k, "__name__", str(k)) for k in kinds)
            raise InvalidArgumentError(f"{section}.{f.name} must be {want}, got {value!r}")
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(obj, f.name, float(value))


def check_limit(section: str, name: str, value: float | None, low: float, strict: bool) -> None:
    if value is not None and (value <= low if strict else value < low):
        raise InvalidArgumentError(
            f"{section}.{name} must be {'>' if strict else '>='} {low:g}, got {value!r}"
        )


def check_choice(section: str, name: str, value: str | None, valid: tuple[str, ...]) -> None:
    if value is not None and value not in valid:
        raise InvalidArgumentError(
            f"{section}.{name} {value!r} is unknown; valid: {', '.join(valid)}"
        )
