"""Where supervised episodes come from: folders, evaluation runs and rosbag2 (MCAP) bags.

Every front end records the same trajectory lines (``episode_start``, one ``request`` per
request, ``episode_end``): in an episode folder's ``trajectory.jsonl`` and, as JSON strings, on
the bag topic ``/captain/trajectory``. :func:`read_source` accepts an episode folder, a folder of
episode folders (``captain eval`` output), or a bag, and returns the episodes it holds. Bad input
raises :class:`DatasetError` naming the file and what is wrong.

:class:`EpisodeData` is the supervised-dataset view of the episode-folder contract
(:mod:`captain_ros.core.episode_folder`): the trajectory lines, strictly read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.bags.messages import TRAJECTORY_TOPIC
from captain_ros.core.episode_folder import (
    TRAJECTORY,
    EpisodeFiles,
    Trajectory,
    episodes_below,
    is_bag,
)
from captain_ros.core.errors import RecordError
from captain_ros.learn.errors import DatasetError


@dataclass(frozen=True)
class EpisodeData:
    """One recorded episode as trajectory records.

    Attributes:
        source: The folder or bag it was read from.
        start: The ``episode_start`` record (system prompt, TASK.md, context config, tools).
        requests: The ``request`` records in order.
        summary: The episode record (``summary.json`` or the ``episode_end`` line).
        image_root: Folder the image paths are relative to (``None`` for bags: text-only rows).
    """

    source: str
    start: dict[str, Any]
    requests: list[dict[str, Any]]
    summary: dict[str, Any]
    image_root: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def task(self) -> str:
        return str(self.summary.get("task") or self.start.get("task", ""))

    @property
    def seed(self) -> int:
        return int(self.summary.get("seed", self.start.get("seed", 0)))


def _episode(
    source: str,
    records: list[dict[str, Any]],
    summary: dict[str, Any] | None,
    image_root: Path | None,
) -> EpisodeData:
    lines = Trajectory.split(records)
    if lines.start is None:
        raise DatasetError(f"{source}: no episode_start record (not a captain_ros trajectory)")
    if summary is None:
        if lines.end is None:
            raise DatasetError(f"{source}: the episode has no end (it did not finish)")
        summary = dict(lines.end.get("summary") or {})
    for r in lines.requests:
        if "context_sha256" not in r or "t" not in r:
            raise DatasetError(f"{source}: request record without t/context_sha256")
    return EpisodeData(source, lines.start, list(lines.requests), summary, image_root)


def read_folder(folder: Path) -> EpisodeData:
    files = EpisodeFiles(folder)
    if not files.is_episode():
        raise DatasetError(f"{folder}: no {TRAJECTORY} (not an episode folder)")
    try:
        records = files.read_trajectory()
        summary = files.read_summary() if files.has_summary() else None
    except RecordError as exc:
        raise DatasetError(str(exc)) from exc
    return _episode(str(folder), records, summary, folder)


def read_bag(bag: Path) -> list[EpisodeData]:
    """Episodes of a bag, from its ``/captain/trajectory`` topic (one bag may hold several)."""
    from captain_ros.bags.rosbag2 import read_messages, summarize_bag

    if not (bag / "metadata.yaml").is_file():
        raise DatasetError(
            f"{bag}: truncated bag (no metadata.yaml): run `captain bag recover {bag}`"
        )
    try:
        info = summarize_bag(bag)
    except Exception as exc:  # noqa: BLE001 - a corrupt file: say which
        raise DatasetError(f"{bag}: unreadable bag ({type(exc).__name__}: {exc})") from exc
    msgtype = info.msgtypes.get(TRAJECTORY_TOPIC)
    if msgtype is None:
        raise DatasetError(
            f"{bag}: no {TRAJECTORY_TOPIC} topic (topics: {', '.join(sorted(info.msgtypes))})"
        )
    if msgtype != "std_msgs/msg/String":
        raise DatasetError(
            f"{bag}: {TRAJECTORY_TOPIC} has unknown message type {msgtype} "
            "(expected std_msgs/msg/String)"
        )
    episodes: list[list[dict[str, Any]]] = []
    try:
        for _topic, _stamp, msg in read_messages(bag, [TRAJECTORY_TOPIC]):
            rec = json.loads(msg.data)
            if rec.get("type") == "episode_start":
                episodes.append([])
            if episodes:
                episodes[-1].append(rec)
    except ValueError as exc:
        raise DatasetError(f"{bag}: a {TRAJECTORY_TOPIC} message is not JSON ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - truncated chunk, bad CDR
        raise DatasetError(
            f"{bag}: cannot read its messages ({type(exc).__name__}: {exc})"
        ) from exc
    if not episodes:
        raise DatasetError(f"{bag}: {TRAJECTORY_TOPIC} holds no episode_start")
    return [_episode(f"{bag}#{k}", recs, None, None) for k, recs in enumerate(episodes)]


def expand(path: str | Path, max_depth: int = 3) -> list[Path]:
    """The episode folders and bags ``path`` names: itself, or (an evaluation run, ``RUN/<task>/
    <seed>/``) the episode folders and bags below it, at most ``max_depth`` levels down (an
    episode folder's own ``bag/`` is its bag, not another episode); :class:`DatasetError` when it
    holds none."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"{p}: no such file or folder")
    found = episodes_below(p, max_depth)
    if found:
        return found
    raise DatasetError(f"{p}: not an episode folder, an evaluation run or a bag")


def read_source(path: str | Path) -> list[EpisodeData]:
    """The episodes of one episode folder or bag (see :func:`expand` for runs)."""
    p = Path(path)
    if is_bag(p):
        return read_bag(p)
    return [read_folder(p)]
