"""Where supervised episodes come from: folders, evaluation runs and rosbag2 (MCAP) bags.

Every front end records the same trajectory lines (``episode_start``, one ``request`` per
request, ``episode_end``): in an episode folder's ``trajectory.jsonl`` and, as JSON strings, on
the bag topic ``/captain/trajectory``. :func:`read_source` accepts an episode folder, a folder of
episode folders (``captain eval`` output), or a bag, and returns the episodes it holds. Bad input
raises :class:`DatasetError` naming the file and what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.bags.messages import TRAJECTORY_TOPIC
from captain_ros.core.episode_folder import TRAJECTORY, EpisodeFiles
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


def _episode(source: str, records: list[dict[str, Any]], summary: dict[str, Any] | None,
             image_root: Path | None) -> EpisodeData:
    starts = [r for r in records if r.get("type") == "episode_start"]
    if not starts:
        raise DatasetError(f"{source}: no episode_start record (not a captain_ros trajectory)")
    requests = [r for r in records if r.get("type") == "request"]
    ends = [r for r in records if r.get("type") == "episode_end"]
    if summary is None:
        if not ends:
            raise DatasetError(f"{source}: the episode has no end (it did not finish)")
        summary = dict(ends[-1].get("summary") or {})
    for r in requests:
        if "context_sha256" not in r or "t" not in r:
            raise DatasetError(f"{source}: request record without t/context_sha256")
    return EpisodeData(source, starts[0], requests, summary, image_root)


def read_folder(folder: Path) -> EpisodeData:
    files = EpisodeFiles(folder)
    traj = files.trajectory
    if not traj.is_file():
        raise DatasetError(f"{folder}: no {TRAJECTORY} (not an episode folder)")
    try:
        records = files.read_trajectory()
    except RecordError as exc:
        raise DatasetError(str(exc)) from exc
    summary = None
    if files.has_summary():
        try:
            summary = json.loads(files.summary.read_text())
        except ValueError as exc:
            raise DatasetError(f"{files.summary}: not JSON ({exc})") from exc
    return _episode(str(folder), records, summary, folder)


def read_bag(bag: Path) -> list[EpisodeData]:
    """Episodes of a bag, from its ``/captain/trajectory`` topic (one bag may hold several)."""
    from captain_ros.bags.rosbag2 import read_messages, summarize_bag

    if not (bag / "metadata.yaml").is_file():
        raise DatasetError(f"{bag}: truncated bag (no metadata.yaml): run `captain bag recover {bag}`")
    try:
        info = summarize_bag(bag)
    except Exception as exc:  # noqa: BLE001 - a corrupt file: say which
        raise DatasetError(f"{bag}: unreadable bag ({type(exc).__name__}: {exc})") from exc
    msgtype = info.msgtypes.get(TRAJECTORY_TOPIC)
    if msgtype is None:
        raise DatasetError(f"{bag}: no {TRAJECTORY_TOPIC} topic (topics: {', '.join(sorted(info.msgtypes))})")
    if msgtype != "std_msgs/msg/String":
        raise DatasetError(f"{bag}: {TRAJECTORY_TOPIC} has unknown message type {msgtype} "
                           "(expected std_msgs/msg/String)")
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
        raise DatasetError(f"{bag}: cannot read its messages ({type(exc).__name__}: {exc})") from exc
    if not episodes:
        raise DatasetError(f"{bag}: {TRAJECTORY_TOPIC} holds no episode_start")
    return [_episode(f"{bag}#{k}", recs, None, None) for k, recs in enumerate(episodes)]


def is_bag(path: Path) -> bool:
    return path.is_dir() and ((path / "metadata.yaml").exists() or bool(list(path.glob("*.mcap"))))


def _is_episode(path: Path) -> bool:
    return is_bag(path) or EpisodeFiles(path).is_episode()


def expand(path: str | Path, max_depth: int = 3) -> list[Path]:
    """The episode folders and bags ``path`` names: itself, or (an evaluation run, ``RUN/<task>/
    <seed>/``) the episode folders and bags below it, at most ``max_depth`` levels down (an
    episode folder's own ``bag/`` is its bag, not another episode); :class:`DatasetError` when it
    holds none."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"{p}: no such file or folder")
    if _is_episode(p):
        return [p]
    found: list[Path] = []
    level = [p] if p.is_dir() else []
    for _ in range(max_depth):
        nxt: list[Path] = []
        for d in level:
            for c in sorted(x for x in d.iterdir() if x.is_dir() and not x.name.startswith(".")):
                (found if _is_episode(c) else nxt).append(c)
        level = nxt
    if found:
        return sorted(found)
    raise DatasetError(f"{p}: not an episode folder, an evaluation run or a bag")


def read_source(path: str | Path) -> list[EpisodeData]:
    """The episodes of one episode folder or bag (see :func:`expand` for runs)."""
    p = Path(path)
    if is_bag(p):
        return read_bag(p)
    return [read_folder(p)]
