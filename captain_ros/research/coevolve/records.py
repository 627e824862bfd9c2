"""Run records: configuration, the event log (``run.jsonl``), the summary, the run's outcome.

A run folder holds ``run.jsonl`` (one JSON event per line: checkpoints, pre-dispatch refusals,
transactions with their evidence, rollbacks, revisions, memory hits and promotions, plan changes,
the termination), ``summary.json`` (configuration, counts, metrics inputs), ``memory/`` (the bank
after the run) and ``report.html``. The same events feed the CLI's live display and the ROS
receipts.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from captain_ros.backends.humanoid.layouts import LAYOUTS
from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.coevolve.metrics import RunOutcome

RUN_LOG = "run.jsonl"
"""A CoEvolve run's event log, beside its ``summary.json`` (:class:`RunLog` writes it)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunConfig:
    """One CoEvolve run.

    Attributes:
        layout: ``base``, ``l2``, ``l3`` or ``l4``.
        seed: Seeds the simulator's tracking errors (and the flat repair's random choices).
        budget: Physical transactions (paper: 80 for the base task).
        drop_limit: Payload drops that end the run (label D; paper: 6).
        stall_limit: Consecutive pre-dispatch failures (invalid or blocked outputs, refused
            revisions) that end the run (label G).
        repair_limit: Rejections at one checkpoint that end the run (label G).
        endpoint: ``full`` (placement, release, retreat) or ``placement``; default: ``full`` on the
            base layout, ``placement`` on the variants (as the paper's scene evaluation).
        typed_revision: ``False`` = flat reflective repair (the ablation).
        memory: ``False`` = no strategy/exemplar memory (the ablation).
        memory_in: A bank folder to preload (transfer); read only.
        noise: Locomotion tracking-error scale of the simulator.
        max_model_calls: Role calls that end the run (label G).
        max_wall_s: Wall-time limit (label C) [s].
    """

    layout: str = "base"
    seed: int = 0
    budget: int = 80
    drop_limit: int = 6
    stall_limit: int = 8
    repair_limit: int = 10
    endpoint: str = ""
    typed_revision: bool = True
    memory: bool = True
    memory_in: str = ""
    noise: float = 1.0
    max_model_calls: int = 600
    max_wall_s: float = 3600.0

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise InvalidArgumentError(
                f"unknown layout {self.layout!r}; valid: {', '.join(LAYOUTS)}"
            )
        if not self.endpoint:
            object.__setattr__(self, "endpoint", "full" if self.layout == "base" else "placement")
        if self.endpoint not in ("full", "placement"):
            raise InvalidArgumentError("endpoint must be full or placement")
        for name in ("budget", "drop_limit", "stall_limit", "repair_limit", "max_model_calls"):
            if int(getattr(self, name)) < 1:
                raise InvalidArgumentError(f"{name} must be at least 1")
        if not self.max_wall_s > 0 or not self.noise >= 0:
            raise InvalidArgumentError("max_wall_s must be > 0 and noise >= 0")

    @property
    def horizon(self) -> int:
        """PAUC horizon: the budget on the base layout, 160 (retrospective) on the variants."""
        return self.budget if self.layout == "base" else max(self.budget, 160)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RunLog:
    """Appends events to ``run.jsonl`` (if a folder is given) and forwards them to listeners."""

    def __init__(
        self,
        out_dir: str | Path | None,
        listeners: list[Callable[[dict[str, Any]], None]] | None = None,
    ) -> None:
        self.out_dir = Path(out_dir) if out_dir else None
        self.listeners = list(listeners or [])
        self.events: list[dict[str, Any]] = []
        self._t0 = time.perf_counter()
        self._fh = None
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self._fh = (self.out_dir / RUN_LOG).open("w")

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        ev = {"type": kind, "wall_s": round(time.perf_counter() - self._t0, 3), **fields}
        self.events.append(ev)
        if self._fh is not None:
            self._fh.write(json.dumps(ev, default=_jsonable) + "\n")
            self._fh.flush()
        for fn in self.listeners:
            try:
                fn(ev)
            except Exception:  # noqa: BLE001 - a display/receipt problem never stops the run
                log.exception("run event listener failed")
        return ev

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _jsonable(v: Any) -> Any:
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (set, tuple)):
        return list(v)
    return str(v)


@dataclass(frozen=True)
class RunSummary:
    """The outcome of one run (``summary.json``)."""

    config: RunConfig
    roles: str
    outcome: RunOutcome
    milestones: tuple[str, ...]
    certified: tuple[str, ...]
    model_calls: int
    prevalidation_failures: int
    rollbacks: int
    revisions: int
    revisions_approved: int
    drops: int
    wall_s: float
    sim_s: float
    physics_steps: int
    memory_hits: int
    memory_size: tuple[int, int]
    out_dir: str = ""

    @property
    def label(self) -> str:
        return self.outcome.termination

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["config"] = self.config.to_dict()
        d["outcome"] = asdict(self.outcome)
        return d

    def save(self, folder: str | Path) -> Path:
        p = EpisodeFiles.of(folder).summary
        p.write_text(json.dumps(self.to_dict(), indent=1, default=_jsonable))
        return p

    @classmethod
    def load(cls, folder: str | Path) -> RunSummary:
        d = EpisodeFiles.of(folder).read_summary()
        o = d["outcome"]
        o["first_attainment"] = tuple(o["first_attainment"])
        return cls(
            RunConfig(**d["config"]),
            d["roles"],
            RunOutcome(**o),
            tuple(d["milestones"]),
            tuple(d["certified"]),
            d["model_calls"],
            d["prevalidation_failures"],
            d["rollbacks"],
            d["revisions"],
            d["revisions_approved"],
            d["drops"],
            d["wall_s"],
            d["sim_s"],
            d["physics_steps"],
            d["memory_hits"],
            tuple(d["memory_size"]),
            d.get("out_dir", ""),
        )
