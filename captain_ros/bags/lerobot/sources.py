"""Which episodes the export's SOURCES name: bags, episode folders and folders of them.

An episode folder's streams live in its ``bag/`` (``captain run``, ``captain eval``) or in the ROS
recorder's bag that its ``summary.json`` names (``bag_path``); its ``summary.json`` is the final
record (it wins over the bag's ``episode_end`` line).
"""

from __future__ import annotations

import json
from pathlib import Path

from captain_ros.bags.lerobot.episode import Episode, ExportError, read_bag
from captain_ros.core.episode_folder import EpisodeFiles


def _is_bag(path: Path) -> bool:
    return path.is_dir() and ((path / "metadata.yaml").exists() or any(path.glob("*.mcap")))


def expand(path: str | Path, max_depth: int = 3) -> list[Path]:
    """The bags and episode folders ``path`` names: itself, or those below it (an evaluation run),
    at most ``max_depth`` levels down; an episode folder's own ``bag/`` is not another episode."""
    p = Path(path)
    if not p.exists():
        raise ExportError(f"{p}: no such file or folder")
    if _is_bag(p) or EpisodeFiles(p).is_episode():
        return [p]
    found: list[Path] = []
    level = [p] if p.is_dir() else []
    for _ in range(max_depth):
        nxt: list[Path] = []
        for d in level:
            for c in sorted(x for x in d.iterdir() if x.is_dir() and not x.name.startswith(".")):
                (found if _is_bag(c) or EpisodeFiles(c).is_episode() else nxt).append(c)
        level = nxt
    if not found:
        raise ExportError(f"{p}: not a bag, an episode folder or a folder of them")
    return sorted(found)


def read_source(path: Path) -> list[Episode]:
    """The episodes of one bag or episode folder (its ``bag/``, or the recorder's bag that its
    ``summary.json`` names, holds the streams)."""
    if _is_bag(path):
        return read_bag(path)
    summary = None
    files = EpisodeFiles(path)
    if files.has_summary():
        try:
            summary = json.loads(files.summary.read_text())
        except ValueError as exc:
            raise ExportError(f"{files.summary}: not JSON ({exc})") from exc
    bag = path / "bag"
    if not _is_bag(bag) and summary and summary.get("bag_path"):
        bag = Path(summary["bag_path"])  # a ROS graph's episode: the recorder's bag, elsewhere
    if not _is_bag(bag):
        raise ExportError(
            f"{path}: an episode folder without its bag (no bag/, no bag_path in summary.json): "
            "the joint states and images live in the bag"
        )
    return read_bag(bag, summary)
