"""Which episodes the export's SOURCES name: bags, episode folders and folders of them.

An episode folder's streams live in its ``bag/`` (``captain run``, ``captain eval``) or in the ROS
recorder's bag that its ``summary.json`` names (``bag_path``); its ``summary.json`` is the final
record (it wins over the bag's ``episode_end`` line).
"""

from __future__ import annotations

from pathlib import Path

from captain_ros.bags.lerobot.episode import Episode, ExportError, read_bag
from captain_ros.core.episode_folder import EpisodeFiles, episodes_below, is_bag
from captain_ros.core.errors import RecordError


def expand(path: str | Path, max_depth: int = 3) -> list[Path]:
    """The bags and episode folders ``path`` names: itself, or those below it (an evaluation run),
    at most ``max_depth`` levels down; an episode folder's own ``bag/`` is not another episode."""
    p = Path(path)
    if not p.exists():
        raise ExportError(f"{p}: no such file or folder")
    found = episodes_below(p, max_depth)
    if not found:
        raise ExportError(f"{p}: not a bag, an episode folder or a folder of them")
    return found


def read_source(path: Path) -> list[Episode]:
    """The episodes of one bag or episode folder (its ``bag/``, or the recorder's bag that its
    ``summary.json`` names, holds the streams)."""
    if is_bag(path):
        return read_bag(path)
    files = EpisodeFiles(path)
    try:
        summary = files.read_summary() if files.has_summary() else None
    except RecordError as exc:
        raise ExportError(str(exc)) from exc
    bag = files.bag
    if not is_bag(bag) and summary and summary.get("bag_path"):
        bag = Path(summary["bag_path"])  # a ROS graph's episode: the recorder's bag, elsewhere
    if not is_bag(bag):
        raise ExportError(
            f"{path}: an episode folder without its bag (no bag/, no bag_path in summary.json): "
            "the joint states and images live in the bag"
        )
    return read_bag(bag, summary)
