"""An episode folder read back whole: :class:`RecordedEpisode`.

It holds ``trajectory.jsonl``, ``summary.json`` and ``privileged.jsonl`` of one finished episode
(for restoring a decision point, :mod:`captain_ros.learn.re0.decision_points`, and for replaying
its requests' contexts); the static part of RE-0's Valid predicate over it is
:func:`captain_ros.learn.re0.determinism.check_restorable`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.core.errors import RecordError
from captain_ros.harness.record.history import History, ImageRef
from captain_ros.harness.record.privileged_log import RequestRecord, StateRecord
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
        root = Path(folder)
        files = EpisodeFiles(root)
        try:
            lines = files.read_trajectory()
            summary = files.read_summary()
        except RecordError as exc:
            raise RestoreRefused(f"{exc} (not a finished episode folder?)") from exc
        start = next((r for r in lines if r.get("type") == "episode_start"), None)
        if start is None:
            raise RestoreRefused(f"{files.trajectory}: no episode_start line")
        requests = tuple(r for r in lines if r.get("type") == "request")
        states: list[StateRecord] = []
        priv_requests: list[RequestRecord] = []
        priv = files.privileged
        if priv.exists():
            for n, line in enumerate(priv.read_text().splitlines(), 1):
                try:
                    d = json.loads(line)
                    if d.get("type") == "state":
                        states.append(StateRecord.from_dict(d))
                    elif d.get("type") == "request":
                        priv_requests.append(RequestRecord.from_dict(d))
                except (ValueError, KeyError, TypeError) as exc:
                    raise RestoreRefused(f"{priv}:{n}: {exc}") from exc
        return cls(root, start, requests, summary, tuple(states), tuple(priv_requests))

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
