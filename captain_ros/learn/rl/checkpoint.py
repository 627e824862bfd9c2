"""Checkpoint and resume of an RL run: everything that determines the next round.

``OUT/checkpoint/`` holds, after round k:

- ``adapter/``: the student's LoRA adapter (peft folder);
- ``updater.pt``: AdamW and LR-schedule state, policy version, rounds accumulated towards the next
  step, the request sampler's RNG and the gradients accumulated so far (a resume in the middle of
  K rounds loses nothing), from :meth:`PolicyUpdater.save_state`;
- ``critic/``: the co-trained critic and its optimizer (:meth:`CoTrainer.save`);
- ``state.json``: the round index, the running advantage std, the run's options and the round's log
  row (re-appended on resume if the log lacks it).

It is written under a temporary name and swapped in when complete, so a run killed while
checkpointing resumes from the previous checkpoint. Round k + 1's start states and sampling seeds
are functions of (seed, round index), so a resumed run reproduces the rounds a straight run makes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.learn.credit import RunningStd
from captain_ros.learn.errors import LearnError

CHECKPOINT_DIR = "checkpoint"
STATE_FILE = "state.json"
FORMAT = "captain-rl-checkpoint/1"


@dataclass(frozen=True)
class Checkpoint:
    """What :func:`read_checkpoint` returns (the heavy parts stay files until loaded)."""

    folder: Path
    round_index: int
    running_std: RunningStd
    options: dict[str, Any]
    last_row: dict[str, Any] | None

    @property
    def adapter(self) -> Path:
        return self.folder / "adapter"

    @property
    def updater(self) -> Path:
        return self.folder / "updater.pt"

    @property
    def critic(self) -> Path:
        return self.folder / "critic"


def write_checkpoint(
    out: str | Path,
    round_index: int,
    model: Any,
    updater: Any,
    cotrainer: Any,
    running_std: RunningStd,
    options: dict[str, Any],
    last_row: dict[str, Any] | None,
) -> Path:
    """Write ``OUT/checkpoint`` atomically (see the module docstring)."""
    dest = Path(out) / CHECKPOINT_DIR
    tmp = Path(tempfile.mkdtemp(prefix=".checkpoint-", dir=Path(out)))
    try:
        model.save_pretrained(str(tmp / "adapter"), safe_serialization=True)
        updater.save_state(tmp / "updater.pt")
        cotrainer.save(tmp / "critic")
        state = {
            "format": FORMAT,
            "round": int(round_index),
            "running_std": running_std.state_dict(),
            "options": options,
            "last_row": last_row,
        }
        (tmp / STATE_FILE).write_text(json.dumps(state, indent=1, default=str) + "\n")
        old = Path(out) / ".checkpoint-old"
        shutil.rmtree(old, ignore_errors=True)
        if dest.exists():
            os.replace(dest, old)
        os.replace(tmp, dest)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def read_checkpoint(out: str | Path) -> Checkpoint | None:
    """The run's checkpoint, or None when there is none (raises if it is unreadable)."""
    folder = Path(out) / CHECKPOINT_DIR
    if not (folder / STATE_FILE).is_file():
        old = Path(out) / ".checkpoint-old"  # killed between the two renames
        if not (old / STATE_FILE).is_file():
            return None
        folder = old
    try:
        d = json.loads((folder / STATE_FILE).read_text())
        if d.get("format") != FORMAT:
            raise ValueError(f"format {d.get('format')!r}, expected {FORMAT!r}")
        for part in ("adapter", "updater.pt", "critic"):
            if not (folder / part).exists():
                raise ValueError(f"{part} is missing")
        return Checkpoint(
            folder,
            int(d["round"]),
            RunningStd.from_state_dict(d["running_std"]),
            dict(d.get("options") or {}),
            d.get("last_row"),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LearnError(f"{folder}: unreadable checkpoint ({exc})") from exc
