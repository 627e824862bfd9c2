"""Bags and episode folders to one LeRobotDataset v3.0 (torch-free: pyarrow, pandas, PyAV).

- :mod:`.sources`: which episodes the SOURCES name (bags, episode folders, runs);
- :mod:`.episode`: an episode's streams and code-as-policy record, read from its bag;
- :mod:`.frames`: the streams on one fixed-rate clock (sample-and-hold, ages stated);
- :mod:`.video`: camera streams to H.264 MP4;
- :mod:`.stats`: ``stats.json`` as LeRobot computes it;
- :mod:`.tables`: the schema, tasks and our own record beside the frames;
- :mod:`.dataset`: the v3.0 layout, written atomically.

``captain bag export --format lerobot --out DIR SOURCES...`` is the command; docs/data.md maps
every column to what it was recorded from.
"""

from captain_ros.bags.lerobot.dataset import ExportSummary, export_lerobot
from captain_ros.bags.lerobot.episode import Episode, ExportError
from captain_ros.bags.lerobot.sources import expand, read_source

__all__ = ["Episode", "ExportError", "ExportSummary", "expand", "export_lerobot", "read_source"]
