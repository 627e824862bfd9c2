"""What the expert's plans produce: requests as calls of session functions, and their notes.

A plan is a generator that yields :class:`Call` (the reasoning of one request and the session
function its cell calls, with literal arguments) and receives the parsed notes of that cell's
output (``dict``; empty when the cell printed no note). The expert turns a call into a
:class:`Cell`: the source of every session function the call needs that the session does not
have yet, then the call line ``note(**fn(S, ...))``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.expert.source import definitions, literal, registered

NOTE_RE = re.compile(r"^NOTE (\{.*\})\s*$", re.MULTILINE)

Notes = dict[str, Any]


@dataclass(frozen=True)
class Cell:
    """One request of the expert: its reasoning and one code cell."""

    reasoning: str
    code: str


@dataclass(frozen=True)
class Call:
    """One request as a plan writes it.

    Attributes:
        reasoning: What the request does and why.
        fn: A session function (registered with ``in_session``) taking the state ``S`` first.
        args: Literal positional arguments after ``S``.
        kwargs: Literal keyword arguments.
        key: Print the result as ``note(key=...)`` instead of ``note(**...)`` (for a function that
            returns a value rather than a dict of notes).
    """

    reasoning: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    key: str | None = None

    def __post_init__(self) -> None:
        if self.fn.__name__ not in registered():
            raise InvalidArgumentError(f"{self.fn.__name__} is not a session function")

    @property
    def name(self) -> str:
        return self.fn.__name__

    def line(self) -> str:
        """The call line of the cell."""
        parts = [
            "S",
            *(literal(a) for a in self.args),
            *(f"{k}={literal(v)}" for k, v in self.kwargs.items()),
        ]
        call = f"{self.name}({', '.join(parts)})"
        return f"note({self.key}={call})" if self.key else f"note(**{call})"

    def cell(self, have: Iterable[str] = ()) -> tuple[Cell, list[str]]:
        """(the cell, the session names it defines) given the names the session ``have``."""
        text, new = definitions([self.name], have)
        return Cell(self.reasoning, (text + "\n" if text else "") + self.line()), new


Plan = Generator[Call, Notes, Any]


def kw(**options: Any) -> dict[str, Any]:
    """Keyword arguments without the ``None`` ones (the call line then shows only what differs
    from the function's defaults)."""
    return {k: v for k, v in options.items() if v is not None}


def parse_notes(output: str) -> Notes:
    """Merge every ``NOTE {json}`` line of a cell's output (later keys win)."""
    notes: Notes = {}
    for m in NOTE_RE.finditer(output or ""):
        try:
            value = json.loads(m.group(1))
        except ValueError:
            continue
        if isinstance(value, dict):
            notes.update(value)
    return notes


def has_note(output: str | None) -> bool:
    """The output holds at least one well-formed note (every expert cell ends with one, so an
    output without one comes from a cell that did not complete)."""
    return any(_is_object(m.group(1)) for m in NOTE_RE.finditer(output or ""))


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False
