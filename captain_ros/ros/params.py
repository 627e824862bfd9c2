"""Node parameters declared once as a schema: type, description, range/choices, validation.

Each node lists its :class:`Param` entries; :func:`declare` declares them with a
``ParameterDescriptor`` (type, description, range, read-only), validates the initial values
(overrides from the YAML file or the command line) and rejects invalid later updates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.node import Node

_TYPES = {
    bool: ParameterType.PARAMETER_BOOL,
    int: ParameterType.PARAMETER_INTEGER,
    float: ParameterType.PARAMETER_DOUBLE,
    str: ParameterType.PARAMETER_STRING,
}


@dataclass(frozen=True)
class Param:
    """One node parameter.

    Attributes:
        name: Parameter name.
        default: Default value; its Python type (bool/int/float/str) is the parameter type.
        description: What it does, with units.
        min_value / max_value: Inclusive numeric range (int and float parameters).
        choices: Allowed values of a string parameter (empty = any).
        read_only: Only settable at start (YAML or ``-p``), not at run time.
    """

    name: str
    default: bool | int | float | str
    description: str
    min_value: float | None = None
    max_value: float | None = None
    choices: tuple[str, ...] = ()
    read_only: bool = True

    def descriptor(self) -> ParameterDescriptor:
        d = ParameterDescriptor(
            name=self.name,
            type=_TYPES[type(self.default)],
            description=self.description,
            read_only=self.read_only,
        )
        if self.choices:
            d.additional_constraints = "one of: " + ", ".join(self.choices)
        lo = self.min_value
        hi = self.max_value
        if isinstance(self.default, float) and (lo is not None or hi is not None):
            d.floating_point_range = [
                FloatingPointRange(
                    from_value=float(lo if lo is not None else -1e300),
                    to_value=float(hi if hi is not None else 1e300),
                    step=0.0,
                )
            ]
        elif (
            isinstance(self.default, int)
            and not isinstance(self.default, bool)
            and (lo is not None or hi is not None)
        ):
            d.integer_range = [
                IntegerRange(
                    from_value=int(lo if lo is not None else -(2**62)),
                    to_value=int(hi if hi is not None else 2**62),
                    step=0,
                )
            ]
        return d

    def check(self, value: Any) -> str | None:
        """Why ``value`` is invalid, or ``None`` when it is valid."""
        if self.choices and value not in self.choices:
            return f"{self.name}={value!r} is not one of: {', '.join(self.choices)}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if self.min_value is not None and value < self.min_value:
                return f"{self.name}={value} is below its minimum {self.min_value}"
            if self.max_value is not None and value > self.max_value:
                return f"{self.name}={value} is above its maximum {self.max_value}"
        return None


class ParameterError(ValueError):
    """A node parameter is invalid (the message names the parameter and the valid values)."""


def declare(
    node: Node,
    params: Sequence[Param],
    extra_check: Callable[[dict[str, Any]], str | None] | None = None,
) -> dict[str, Any]:
    """Declare ``params`` on ``node`` and return their validated values by name.

    Raises:
        ParameterError: An initial value is out of range / not an allowed choice.
    """
    values: dict[str, Any] = {}
    for p in params:
        values[p.name] = node.declare_parameter(p.name, p.default, p.descriptor()).value
    problems = [msg for p in params if (msg := p.check(values[p.name]))]
    if extra_check is not None and (msg := extra_check(values)):
        problems.append(msg)
    if problems:
        raise ParameterError(f"{node.get_name()}: " + "; ".join(problems))
    by_name = {p.name: p for p in params}

    def on_set(updates: list[Any]) -> SetParametersResult:
        for u in updates:
            p = by_name.get(u.name)
            if p is not None and (msg := p.check(u.value)):
                return SetParametersResult(successful=False, reason=msg)
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    return values
