"""The episode folder: the names of its files, spelled once here, and the one reader of its JSON files.

One episode writes one folder (``harness.episode.loop``, the ROS policy node; a CoEvolve run writes its
own summary under the same name). Everything that reads it goes through :class:`EpisodeFiles`::

    <episode>/
      summary.json       SUMMARY      the EpisodeRecord (harness/record/episode_record.py)
      trajectory.jsonl   TRAJECTORY   episode_start, one line per request, episode_end
      privileged.jsonl   PRIVILEGED   the hidden per-request state (simulation backends only)
      TASK.md            TASK_MD      the task document the policy was given
      report.html        REPORT       written by ``captain report``
      session.log        SESSION_LOG  the Python session's own log
      images/            IMAGES       the camera images attached to requests (paths in the trajectory
                                      are relative to the folder: ``images/r001_c1_0_wrist.png``)
      workspace/         WORKSPACE    the session's working folder (its copy of TASK.md)
      bag/               BAG          the episode's rosbag2 bag (``captain run``, ``captain eval``)
      rollout.json       ROLLOUT      an RL rollout's tokens (learn/rl/batch.py)

One JSON reader (:func:`read_json_object`) and one JSON-lines reader (:func:`read_jsonl`), each strict
by default (a missing or malformed file is a :class:`~captain_ros.core.errors.RecordError` naming the
file and the line) or lenient for display (``lenient=True``: what cannot be parsed is skipped, a
missing file is empty). Every writer ends each line with a newline and flushes it, so a process that
dies mid-line leaves a torn last line: the strict reader names it as such (an unfinished episode is
refused by every strict reader anyway), the lenient one shows the lines before it.
:class:`Trajectory` splits ``trajectory.jsonl``'s lines by type.

The typed views over these files, each for one reader, all reading through this module:

- :class:`captain_ros.report.record.EpisodeFolder`: the report's display view (lenient; knows the
  older summary keys);
- :class:`captain_ros.learn.data.sources.EpisodeData`: supervised datasets: the trajectory lines of a
  folder or of a bag's ``/captain/trajectory`` topic;
- :class:`captain_ros.harness.record.recorded.RecordedEpisode`: RE-0's restore and replay view: the
  trajectory, the summary and the privileged states and requests of a finished folder;
- :class:`captain_ros.harness.record.privileged_log.EpisodeLearningRecord`: the critic's, credit's and
  RL's view: the summary's outcome with the privileged states, requests, costs and return.

The privileged lines are parsed once, by :func:`captain_ros.harness.record.privileged_log.read_privileged`,
for the last two.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.core.errors import RecordError

SUMMARY = "summary.json"
TRAJECTORY = "trajectory.jsonl"
PRIVILEGED = "privileged.jsonl"
TASK_MD = "TASK.md"
REPORT = "report.html"
SESSION_LOG = "session.log"
WORKSPACE = "workspace"
IMAGES = "images"
BAG = "bag"
ROLLOUT = "rollout.json"
FILE_NAMES = (SUMMARY, TRAJECTORY, PRIVILEGED, TASK_MD, REPORT, SESSION_LOG, ROLLOUT)
"""The file names (the folder names ``workspace`` and ``bag`` are common words elsewhere)."""


def read_json_object(path: Path, *, lenient: bool = False) -> dict[str, Any]:
    """A JSON file holding one object; :class:`RecordError` naming the file otherwise (``lenient``:
    ``{}`` instead, bytes that are not UTF-8 replaced, for display)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace" if lenient else "strict")
        data = json.loads(text)
    except FileNotFoundError as exc:
        if lenient:
            return {}
        raise RecordError(f"{path}: missing") from exc
    except (OSError, ValueError) as exc:
        if lenient:
            return {}
        raise RecordError(f"{path}: not readable as JSON ({exc})") from exc
    if not isinstance(data, dict):
        if lenient:
            return {}
        raise RecordError(f"{path}: holds a {type(data).__name__}, not a JSON object")
    return data


def read_jsonl_numbered(path: Path, *, lenient: bool = False) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each line of a JSON-lines file, blank lines skipped.

    Strict (default): a missing file, or a line that is not a JSON object, is a :class:`RecordError`
    naming the file and the line (a torn last line, one the writer never ended, says so).
    ``lenient``: a missing file is empty and such lines are skipped (bytes that are not UTF-8 are
    replaced)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace" if lenient else "strict")
    except FileNotFoundError as exc:
        if lenient:
            return []
        raise RecordError(f"{path}: missing") from exc
    except (OSError, ValueError) as exc:
        if lenient:
            return []
        raise RecordError(f"{path}: not readable ({exc})") from exc
    lines = text.splitlines()
    out: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            problem = (
                "" if isinstance(rec, dict) else f"holds a {type(rec).__name__}, not a JSON object"
            )
        except ValueError as exc:
            torn = n == len(lines) and not text.endswith("\n")
            problem = f"not JSON ({exc})" + (
                "; the last line is torn (its writer stopped in it)" if torn else ""
            )
        if not problem:
            out.append((n, rec))
        elif not lenient:
            raise RecordError(f"{path}:{n}: {problem}")
    return out


def read_jsonl(path: Path, *, lenient: bool = False) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file (:func:`read_jsonl_numbered` without the line numbers)."""
    return [rec for _, rec in read_jsonl_numbered(path, lenient=lenient)]


def is_bag(path: Path) -> bool:
    """Whether ``path`` is a rosbag2 bag: its ``metadata.yaml``, or the MCAP files of a bag that
    its recorder never closed."""
    return path.is_dir() and ((path / "metadata.yaml").exists() or any(path.glob("*.mcap")))


def episodes_below(path: Path, max_depth: int = 3) -> list[Path]:
    """The episode folders and bags ``path`` names: itself, or (an evaluation run, ``RUN/<task>/
    <seed>/``) those below it, at most ``max_depth`` levels down, sorted (an episode folder's own
    ``bag/`` is its bag, not another episode; hidden folders are passed over); ``[]`` when none."""
    if is_bag(path) or EpisodeFiles(path).is_episode():
        return [path]
    found: list[Path] = []
    level = [path] if path.is_dir() else []
    for _ in range(max_depth):
        nxt: list[Path] = []
        for d in level:
            for c in sorted(x for x in d.iterdir() if x.is_dir() and not x.name.startswith(".")):
                (found if is_bag(c) or EpisodeFiles(c).is_episode() else nxt).append(c)
        level = nxt
    return sorted(found)


@dataclass(frozen=True)
class Trajectory:
    """``trajectory.jsonl``'s lines by type (from a folder, or a bag's trajectory topic).

    Attributes:
        start: The first ``episode_start`` line (``None``: none).
        requests: The ``request`` lines, in order.
        end: The last ``episode_end`` line (``None``: the episode did not finish).
    """

    start: dict[str, Any] | None
    requests: tuple[dict[str, Any], ...]
    end: dict[str, Any] | None

    @classmethod
    def split(cls, records: Iterable[dict[str, Any]]) -> Trajectory:
        recs = list(records)
        starts = [r for r in recs if r.get("type") == "episode_start"]
        ends = [r for r in recs if r.get("type") == "episode_end"]
        return cls(
            starts[0] if starts else None,
            tuple(r for r in recs if r.get("type") == "request"),
            ends[-1] if ends else None,
        )


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

    @property
    def session_log(self) -> Path:
        return self.root / SESSION_LOG

    @property
    def workspace(self) -> Path:
        return self.root / WORKSPACE

    @property
    def bag(self) -> Path:
        return self.root / BAG

    @property
    def rollout(self) -> Path:
        return self.root / ROLLOUT

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
        return read_json_object(self.summary, lenient=True)

    def read_trajectory(self, *, lenient: bool = False) -> list[dict[str, Any]]:
        """``trajectory.jsonl``'s records; :class:`RecordError` when missing or malformed
        (``lenient``: what can be read, for display)."""
        return read_jsonl(self.trajectory, lenient=lenient)

    def read_trajectory_split(self, *, lenient: bool = False) -> Trajectory:
        """``trajectory.jsonl``'s records by type (see :meth:`read_trajectory`)."""
        return Trajectory.split(self.read_trajectory(lenient=lenient))
