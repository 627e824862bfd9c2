"""The episode history h_t as plain frozen data (what the context renderer and the log share)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ImageRef:
    """An image saved in the episode folder: ``path`` relative to it, with its camera and handle."""

    path: str
    camera: str = ""
    handle: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "camera": self.camera, "handle": self.handle}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ImageRef:
        return cls(str(d["path"]), str(d.get("camera", "")), str(d.get("handle", "")))


@dataclass(frozen=True)
class ToolCall:
    """One ``python`` tool call of a request."""

    call_id: str
    code: str


@dataclass(frozen=True)
class ToolOutput:
    """What the harness returned for one tool call: output text (receipts included) and images."""

    call_id: str
    text: str
    images: tuple[ImageRef, ...] = ()


@dataclass(frozen=True)
class Turn:
    """Request ``index`` (1-based): the policy's reasoning and calls, and what came back.

    ``notice`` is harness text shown after the outputs (malformed tool calls, skipped calls,
    budget messages); empty when there is none.
    """

    index: int
    reasoning: str
    calls: tuple[ToolCall, ...] = ()
    outputs: tuple[ToolOutput, ...] = ()
    notice: str = ""


@dataclass(frozen=True)
class History:
    """h_t: system prompt, task context (TASK.md, instruction, initial images) and the turns so far."""

    system: str
    task_md: str
    initial_images: tuple[ImageRef, ...] = ()
    turns: tuple[Turn, ...] = field(default_factory=tuple)

    def upto(self, t: int) -> History:
        """The history the policy saw at request ``t`` (turns 1..t-1)."""
        return History(self.system, self.task_md, self.initial_images, self.turns[: max(0, t - 1)])

    def with_turn(self, turn: Turn) -> History:
        return History(self.system, self.task_md, self.initial_images, self.turns + (turn,))
