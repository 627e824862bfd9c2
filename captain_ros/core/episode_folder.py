"""The episode folder: the names of its files, spelled once here, and the readers of its JSON files.

One episode writes one folder (``harness.episode.loop``, the ROS policy node; a CoEvolve run writes its
own summary under the same name). The report, learning, RE-0, the bag tools and the CLI read it
through :class:`EpisodeFiles`::

    <episode>/
      summary.json       SUMMARY     the EpisodeRecord (harness/record/episode_record.py)
      trajectory.jsonl   TRAJECTORY  episode_start, one line per request, episode_end
      privileged.jsonl   PRIVILEGED  the hidden per-request state (simulation backends only)
      TASK.md            TASK_MD     the task document the policy was given
      report.html        REPORT      written by ``captain report``

A file that is missing or malformed is a :class:`~captain_ros.core.errors.RecordError` naming the
file and the problem; :func:`read_jsonl_lenient` is the reader for display, which skips what it
cannot parse.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.core.errors import RecordError

SUMMARY = "summary.json"
TRAJECTORY = "trajectory.jsonl"
PRIVILEGED = "privileged.jsonl"
TASK_MD = "TASK.md"
REPORT = "report.html"


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file holding one object; :class:`RecordError` naming the file otherwise."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RecordError(f"{path}: missing") from exc
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path}: not readable as JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise RecordError(f"{path}: holds a {type(data).__name__}, not a JSON object")
    return data


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file, blank lines skipped; :class:`RecordError` naming the
    file and line of the first one that is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RecordError(f"{path}: missing") from exc
    except OSError as exc:
        raise RecordError(f"{path}: not readable ({exc})") from exc
    out: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise RecordError(f"{path}:{n}: not JSON ({exc})") from exc
        if not isinstance(rec, dict):
            raise RecordError(f"{path}:{n}: holds a {type(rec).__name__}, not a JSON object")
        out.append(rec)
    return out


def read_jsonl_lenient(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file for display: a missing file is empty, and unparseable
    lines and non-objects are skipped (a crashed episode's last line may be cut)."""
    out: list[dict[str, Any]] = []
    if not path.exists():
        return out
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


@dataclass(frozen=True)
class EpisodeFiles:
    """The files of one episode folder (paths; nothing is read until asked)."""

    root: Path

    @classmethod
    def of(cls, folder: str | Path) -> EpisodeFiles:
        return cls(Path(folder))

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def trajectory(self) -> Path:
        return self.root / TRAJECTORY

    @property
    def privileged(self) -> Path:
        return self.root / PRIVILEGED

    @property
    def task_md(self) -> Path:
        return self.root / TASK_MD

    @property
    def report(self) -> Path:
        return self.root / REPORT

    def is_episode(self) -> bool:
        """Whether the folder holds an episode's trajectory (the one file every writer writes)."""
        return self.trajectory.is_file()

    def has_summary(self) -> bool:
        return self.summary.is_file()

    def read_summary(self) -> dict[str, Any]:
        """``summary.json`` as a dict; :class:`RecordError` when missing or malformed."""
        return read_json_object(self.summary)

    def read_summary_or_empty(self) -> dict[str, Any]:
        """``summary.json`` for display: ``{}`` when missing, unreadable or not an object (bytes
        that are not UTF-8 are replaced)."""
        try:
            data = json.loads(self.summary.read_text(errors="replace"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def read_trajectory(self) -> list[dict[str, Any]]:
        """``trajectory.jsonl``'s records; :class:`RecordError` when missing or malformed."""
        return read_jsonl(self.trajectory)
