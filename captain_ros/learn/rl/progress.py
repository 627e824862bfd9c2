"""What an RL run shows while it runs: the rollouts' progress and one line per round."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np


class Ticker:
    """Progress on stderr: ``round 3/10  episodes 12/16`` updated in place on a terminal, one line
    per tick in a log file."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()

    def of(self, label: str, n: int) -> Callable[[Any], None]:
        """A callback that counts finished episodes."""
        done = [0]

        def tick(_record: Any) -> None:
            done[0] += 1
            self.show(label, done[0], n)

        return tick

    def show(self, label: str, done: int, n: int, unit: str = "episodes") -> None:
        """One progress step: ``label  unit done/n`` (nothing when disabled)."""
        if not self.enabled:
            return
        end = "\n" if done == n or not self.tty else ""
        print(f"\r{label}  {unit} {done}/{n}", end=end, file=sys.stderr, flush=True)


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, spec)


def round_line(row: dict[str, Any], rounds: int) -> str:
    h = row.get("heldout")
    held = f"  held-out {_fmt(h['success']['rate'], '.0%')}" if h else ""
    return (
        f"round {row['round']}/{rounds}  success {_fmt(row.get('success'), '.0%')}  "
        f"return {_fmt(row.get('return_mean'), '+.3f')}  critic {_fmt(row.get('critic_loss'), '.3f')}  "
        f"kept {_fmt(row.get('kept_fraction'), '.3f')}  KL {_fmt(row.get('kl'), '.2e')}  "
        f"v{row['policy_version_rollouts']}->v{row.get('policy_version')}  "
        f"rollouts {row['wall_rollouts_s']:.0f} s  update {row.get('wall_update_s', 0):.0f} s"
        f"{held}"
    )
