"""Conditions, many runs per condition, and the metrics table.

Conditions (the paper's ablations):

* ``coevolve``: typed revision and strategy/exemplar memory, starting empty;
* ``flat``: flat reflective repair instead of typed revision (memory on);
* ``nomem``: typed revision without dynamic memory;
* ``bank``: CoEvolve starting from a preloaded bank (transfer; the bank stays read only).

Runs are independent processes' worth of work (one simulator, one sandbox each); ``workers > 1``
runs them in parallel processes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.evaluation.runner import warn_oversubscription
from captain_ros.evaluation.stats import wilson_interval
from captain_ros.research.coevolve.metrics import GroupMetrics, group_metrics
from captain_ros.research.coevolve.records import RunConfig, RunSummary

CONDITIONS = ("coevolve", "flat", "nomem", "bank")


def condition_config(base: RunConfig, condition: str, bank: str = "") -> RunConfig:
    """``base`` adjusted for ``condition``."""
    if condition == "coevolve":
        return replace(base, typed_revision=True, memory=True, memory_in="")
    if condition == "flat":
        return replace(base, typed_revision=False, memory=True, memory_in="")
    if condition == "nomem":
        return replace(base, typed_revision=True, memory=False, memory_in="")
    if condition == "bank":
        if not bank:
            raise InvalidArgumentError(
                "the bank condition needs a memory bank folder (--memory DIR)"
            )
        return replace(base, typed_revision=True, memory=True, memory_in=bank)
    raise InvalidArgumentError(f"unknown condition {condition!r}; valid: {', '.join(CONDITIONS)}")


def run_one(
    config: RunConfig,
    roles: str,
    out_dir: str,
    role_options: dict[str, Any] | None = None,
    listeners: list[Any] | None = None,
) -> RunSummary:
    """One run (a fresh simulator and sandbox); the roles are closed afterwards."""
    from captain_ros.research.coevolve.loop import CoEvolveRun
    from captain_ros.research.coevolve.roles import make_roles

    role_set = make_roles(roles, config.typed_revision, role_options)
    try:
        return CoEvolveRun(config, role_set, out_dir, listeners=listeners).run()
    finally:
        role_set.close()


def _job(args: tuple[RunConfig, str, str, dict[str, Any]]) -> dict[str, Any]:
    s = run_one(*args)
    return s.to_dict()


@dataclass(frozen=True)
class ConditionResult:
    """Runs and metrics of one condition."""

    condition: str
    layout: str
    runs: tuple[RunSummary, ...]
    metrics: GroupMetrics

    def row(self) -> dict[str, Any]:
        sr = wilson_interval(sum(r.outcome.success for r in self.runs), len(self.runs))
        m = self.metrics
        return {
            "condition": self.condition,
            "layout": self.layout,
            "n": m.n,
            "SR": round(m.sr, 1),
            "SR_wilson95": [round(100 * sr.low, 1), round(100 * sr.high, 1)],
            "VP": round(m.vp, 1),
            "EA": m.ea_text(),
            "PAUC": round(m.pauc, 1),
            "horizon": m.horizon,
            "transactions": round(m.mean_transactions, 1),
            "terminations": m.terminations,
            "wall_s": round(sum(r.wall_s for r in self.runs) / len(self.runs), 1),
            "model_calls": round(sum(r.model_calls for r in self.runs) / len(self.runs), 1),
            "physics_steps_per_s": round(
                sum(r.physics_steps for r in self.runs)
                / max(1e-9, sum(r.wall_s for r in self.runs))
            ),
        }


def evaluate(
    base: RunConfig,
    condition: str,
    seeds: Sequence[int],
    roles: str,
    out_dir: str | Path,
    bank: str = "",
    workers: int = 1,
    role_options: dict[str, Any] | None = None,
    on_run: Callable[[RunSummary], None] | None = None,
) -> ConditionResult:
    """Run ``condition`` on ``seeds``; folders ``out_dir/<condition>/<layout>_<seed>``."""
    cfgs = [replace(condition_config(base, condition, bank), seed=int(s)) for s in seeds]
    root = Path(out_dir) / condition
    jobs = [(c, roles, str(root / f"{c.layout}_{c.seed}"), dict(role_options or {})) for c in cfgs]
    runs: list[RunSummary] = []
    if workers > 1 and roles == "scripted":
        import multiprocessing

        warn_oversubscription(workers)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as ex:
            for d in ex.map(_job, jobs):
                s = RunSummary.load(d["out_dir"])
                runs.append(s)
                if on_run:
                    on_run(s)
    else:
        for j in jobs:
            s = run_one(*j)
            runs.append(s)
            if on_run:
                on_run(s)
    res = ConditionResult(
        condition, base.layout, tuple(runs), group_metrics([r.outcome for r in runs], base.horizon)
    )
    root.mkdir(parents=True, exist_ok=True)
    (root / f"metrics_{base.layout}.json").write_text(json.dumps(res.row(), indent=1))
    return res


def table(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of condition rows."""
    head = (
        f"{'condition':<10} {'layout':<6} {'n':>3} {'SR %':>6} {'SR 95% CI':>13} {'VP %':>6} {'EA %':>7} "
        f"{'PAUC %':>7} {'T':>5} {'wall s':>7}  terminations"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        ci = f"[{r['SR_wilson95'][0]:.0f}, {r['SR_wilson95'][1]:.0f}]"
        terms = " ".join(f"{k}:{v}" for k, v in sorted(r["terminations"].items()))
        lines.append(
            f"{r['condition']:<10} {r['layout']:<6} {r['n']:>3} {r['SR']:>6.1f} {ci:>13} {r['VP']:>6.1f} "
            f"{r['EA']:>7} {r['PAUC']:>7.1f} {r['transactions']:>5.1f} {r['wall_s']:>7.1f}  {terms}"
        )
    return "\n".join(lines)
