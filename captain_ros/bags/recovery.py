"""A crashed recorder's leftovers (pure Python, no rclpy): the unclosed bags of a bag folder.

A recorder killed mid-episode leaves its bag without ``metadata.yaml`` and its ``.mcap`` without
summary and footer. At start the recorder makes every such bag of its ``output_dir`` readable again
(:func:`~captain_ros.bags.rosbag2.recover_bag`); a bag beyond repair is reported, never fatal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from captain_ros.bags.rosbag2 import recover_bag


@dataclass(frozen=True)
class BagRecovery:
    """One unclosed bag and what became of it (``error``: why it could not be recovered)."""

    path: str
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def unclosed_bags(folder: str | os.PathLike[str]) -> list[Path]:
    """The bags in ``folder`` that a writer never closed: a ``.mcap`` but no ``metadata.yaml``
    (sorted by name; none when the folder does not exist)."""
    out = Path(folder)
    if not out.is_dir():
        return []
    return [
        d
        for d in sorted(out.glob("*"))
        if d.is_dir() and not (d / "metadata.yaml").exists() and list(d.glob("*.mcap"))
    ]


def recover_unclosed(folder: str | os.PathLike[str]) -> list[BagRecovery]:
    """Make every unclosed bag in ``folder`` readable again, in name order."""
    done = []
    for d in unclosed_bags(folder):
        try:
            recover_bag(d)
            done.append(BagRecovery(str(d)))
        except Exception as exc:  # noqa: BLE001 - a bag beyond repair is reported, not fatal
            done.append(BagRecovery(str(d), str(exc) or type(exc).__name__))
    return done
