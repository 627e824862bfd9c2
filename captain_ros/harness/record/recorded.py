"""An episode folder read back whole: :class:`RecordedEpisode`.

It holds ``trajectory.jsonl``, ``summary.json`` and ``privileged.jsonl`` of one finished episode
(for restoring a decision point, :mod:`captain_ros.research.re0.decision_points`, and for replaying
its requests' contexts); the static part of RE-0's Valid predicate over it is
:func:`captain_ros.research.re0.determinism.check_restorable`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.core.errors import RecordError
from captain_ros.harness.record.history import History, ImageRef
from captain_ros.harness.record.privileged_log import RequestRecord, StateRecord, read_privileged
from captain_ros.harness.record.robot_state import RestoreRefused
from captain_ros.harness.record.trajectory import turn_from_record

EXTRA_KEY = "decision_points"
"""Key of the record's ``extra`` where :class:`DecisionPointSource` notes the scene model key and
the noise draw of the episode."""


@dataclass(frozen=True)
class RecordedEpisode:
    """An episode folder read back for restoring: its log lines and hidden record."""

    folder: Path
    start: dict[str, Any]
    requests: tuple[dict[str, Any], ...]
    summary: dict[str, Any]
    states: tuple[StateRecord, ...]
    privileged_requests: tuple[RequestRecord, ...]

    @classmethod
    def load(cls, folder: str | Path) -> RecordedEpisode:
        """Read ``folder``; raises :class:`RestoreRefused` naming the file and the problem."""
        files = EpisodeFiles(Path(folder))
        try:
            lines = files.read_trajectory_split()
            summary = files.read_summary()
        except RecordError as exc:
            raise RestoreRefused(f"{exc} (not a finished episode folder?)") from exc
        if lines.start is None:
            raise RestoreRefused(f"{files.trajectory}: no episode_start line")
        try:
            priv = read_privileged(files, missing_ok=True)
        except RecordError as exc:
            raise RestoreRefused(str(exc)) from exc
        return cls(files.root, lines.start, lines.requests, summary, priv.states, priv.requests)

    @property
    def task(self) -> str:
        return str(self.start.get("task", ""))

    @property
    def seed(self) -> int:
        return int(self.start.get("seed", 0))

    @property
    def n_requests(self) -> int:
        return len(self.requests)

    @property
    def noted(self) -> dict[str, Any]:
        """What :class:`DecisionPointSource` noted about the robot (model key, noise draw)."""
        return dict((self.summary.get("extra") or {}).get(EXTRA_KEY) or {})

    def history(self) -> History:
        return History(
            str(self.start["system"]),
            str(self.start["task_md"]),
            tuple(_image_refs(self.start.get("initial_images") or [])),
            tuple(turn_from_record(r) for r in self.requests),
        )


def _image_refs(items: Sequence[dict[str, Any]]) -> list[ImageRef]:
    return [ImageRef.from_dict(i) for i in items]
