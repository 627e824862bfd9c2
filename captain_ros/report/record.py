"""An episode folder as the report reads it: ``summary.json``, ``trajectory.jsonl``, one accessor.

The display view of :mod:`captain_ros.core.episode_folder` (read leniently: a crashed episode's
torn last line or missing summary still gives a page).

Every front end writes the one :class:`~captain_ros.harness.record.episode_record.EpisodeRecord`; folders
written before it existed used other keys (``finish_called``, ``tokens_prompt``) and may lack
``policy`` or ``backend``. :meth:`EpisodeFolder.field` is the one place that knows those older
spellings; a field that none of the records has is ``None``, shown as "unknown", never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles

ALIASES: dict[str, tuple[str, ...]] = {
    "finished": ("finished", "finish_called"),
    "tokens_prompt": ("tokens_prompt", "prompt_tokens"),
    "tokens_completion": ("tokens_completion", "completion_tokens"),
    "robot_calls": ("robot_calls",),
    "end_reason": ("end_reason",),
}
"""Canonical summary field -> the keys it has been written under, preferred first."""


@dataclass(frozen=True)
class EpisodeFolder:
    """The records of one episode folder.

    Attributes:
        root: The folder.
        summary: ``summary.json`` (empty when missing or unreadable).
        start / end: The ``episode_start`` / ``episode_end`` trajectory records (empty if absent).
        requests: The ``request`` records, in order.
    """

    root: Path
    summary: dict[str, Any]
    start: dict[str, Any]
    end: dict[str, Any]
    requests: list[dict[str, Any]]

    @classmethod
    def load(cls, root: str | Path) -> EpisodeFolder:
        files = EpisodeFiles.of(root)
        lines = files.read_trajectory_split(lenient=True)
        return cls(
            files.root,
            files.read_summary_or_empty(),
            lines.start or {},
            lines.end or {},
            list(lines.requests),
        )

    def _sources(self) -> list[dict[str, Any]]:
        end_summary = self.end.get("summary")
        srcs = [self.summary, end_summary if isinstance(end_summary, dict) else {}]
        srcs += [s["extra"] for s in list(srcs) if isinstance(s.get("extra"), dict)]
        return [*srcs, self.start]

    def field(self, name: str, default: Any = None) -> Any:
        """A summary field by its canonical name (see :data:`ALIASES`), looked up in
        ``summary.json``, then the trajectory's ``episode_end`` summary, their ``extra`` dicts and
        the ``episode_start`` record; ``default`` when none has it (or it is empty)."""
        for src in self._sources():
            for key in ALIASES.get(name, (name,)):
                value = src.get(key)
                if value is not None and value != "":
                    return value
        return default

    def number(self, name: str) -> float | None:
        """A numeric field, ``None`` when missing or not a number."""
        value = self.field(name)
        try:
            return float(value) if value is not None and not isinstance(value, bool) else None
        except (TypeError, ValueError):
            return None

    @property
    def title(self) -> str:
        return f"{self.field('task', '?')} seed {self.field('seed', '?')}"
