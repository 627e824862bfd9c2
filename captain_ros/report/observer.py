"""The report as an episode observer: ``report.html`` is rendered once ``summary.json`` exists."""

from __future__ import annotations

from pathlib import Path

from captain_ros.harness.episode.observers import EpisodeObserver
from captain_ros.harness.record.episode_record import EpisodeRecord


class ReportObserver(EpisodeObserver):
    """Renders ``report.html`` of the episode folder when the episode ends (the observer guard
    logs a rendering problem; it never fails the episode)."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)

    def on_end(self, record: EpisodeRecord) -> None:
        from captain_ros.report.html import write_report

        write_report(self.out_dir)
