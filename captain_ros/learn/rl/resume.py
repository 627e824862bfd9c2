"""Resuming a stopped RL run: its options, an interrupted round's leftovers and its log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import ROLLOUT, EpisodeFiles
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.rl.options import RLOptions


def check_first_round_resume(out: Path, opts: RLOptions) -> None:
    """A run stopped in its first round has no checkpoint; it resumes from round 1 (reading back
    its finished rollouts) if its ``run.json`` has the same options."""
    try:
        saved = json.loads((out / "run.json").read_text())
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(f"{out} has no checkpoint to resume from") from exc
    conflicts = opts.resume_conflicts(saved)
    if conflicts:
        raise InvalidArgumentError(f"cannot resume with changed options: {conflicts[0]}")


def prune_round(folder: Path) -> None:
    """Remove everything of an interrupted round but its finished episode folders."""
    keep = {p.parent for p in folder.rglob(ROLLOUT) if EpisodeFiles(p.parent).has_summary()}

    def prune(d: Path) -> bool:  # True: d holds something kept
        if d in keep:
            return True
        kept = False
        for child in list(d.iterdir()):
            if child.is_dir() and prune(child):
                kept = True
            elif child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
        return kept

    if not prune(folder):
        shutil.rmtree(folder)


def read_log(path: Path, before_round: int) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    return [r for r in rows if int(r.get("round", 0)) < before_round]
