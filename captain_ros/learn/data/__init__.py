"""Supervised rows from recorded episodes (torch-free): ``captain learn dataset``.

- :mod:`.sources`: episode folders, evaluation runs and MCAP bags (the in-process bag, the ROS
  recorder's, a hardware bag without privileged topics) read as the same trajectory records;
- :mod:`.rows`: each request's history re-rendered exactly as the policy saw it (hash-checked),
  packed into append-only rows with per-turn weights and the coordinate mask;
- :mod:`.build`: outcome filters, splits by seed, deduplication, ``stats.json``.
"""

from captain_ros.learn.data.build import DatasetReport, build_dataset
from captain_ros.learn.data.rows import episode_rows, turn_weights
from captain_ros.learn.data.sources import DatasetError, EpisodeData, read_source

__all__ = [
    "DatasetError",
    "DatasetReport",
    "EpisodeData",
    "build_dataset",
    "episode_rows",
    "read_source",
    "turn_weights",
]
