"""What a robot capability is: its parameters (name, kind, default, doc with units) and its
declaration (docstring, group, whether it is a physical action, whether it takes ``arm``).

The capabilities themselves are declared in :mod:`captain_ros.api.registry` (these names are also
importable from there). Pure data: the sandbox child imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
"""Sentinel default of a required parameter."""

# Parameter kinds understood by the validator (captain_ros.api.validation).
KINDS = (
    "position",  # 3 finite floats [m]
    "quat",  # 4 finite floats, unit quaternion (w, x, y, z)
    "float",  # finite float
    "pos_float",  # finite float > 0
    "int",  # integer
    "str",  # string
    "bool",  # boolean
    "jaw",  # opening [m] (float >= 0) or "open" / "close"
    "arm",  # arm name or None
    "str_list",  # list of strings
    "points",  # list of [u, v] pixel pairs
    "obj",  # detection id string or a detection dict with "id"
)

GROUPS = ("perception", "measurement", "motion", "planning", "state", "completion")


@dataclass(frozen=True)
class Param:
    """One parameter of a capability.

    Attributes:
        name: Keyword name.
        kind: One of :data:`KINDS`; drives validation.
        default: Default value, or :data:`REQUIRED`.
        doc: One line with units.
        nullable: ``None`` is accepted.
        choices: Allowed values for a string parameter (empty = any).
    """

    name: str
    kind: str
    default: Any = REQUIRED
    doc: str = ""
    nullable: bool = False
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown parameter kind {self.kind!r}; valid: {', '.join(KINDS)}")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Capability:
    """One robot capability.

    Attributes:
        name: Method name on the ``robot`` client and on the implementing service.
        group: One of :data:`GROUPS`.
        doc: Docstring (first line = one-line summary); units in brackets.
        params: Parameters in call order.
        physical: Counts against the physical-action budget.
        takes_arm: Has the optional ``arm`` parameter (routing rule when ``None``).
        service: Which service implements it: ``"motion"``, ``"perception"`` or ``"harness"``.
        returns: One line describing ``Result.value``.
    """

    name: str
    group: str
    doc: str
    params: tuple[Param, ...]
    physical: bool
    service: str
    returns: str = ""

    @property
    def takes_arm(self) -> bool:
        return any(p.name == "arm" for p in self.params)

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0]

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def signature(self) -> str:
        """Python signature text, e.g. ``move_to(position=None, ...)``."""
        parts = [p.name if p.required else f"{p.name}={p.default!r}" for p in self.params]
        return f"{self.name}({', '.join(parts)})"
