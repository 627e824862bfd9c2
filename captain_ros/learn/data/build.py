"""``captain learn dataset``: rows of many episodes, filtered, split by seed, deduplicated.

Output folder: ``train.jsonl`` and ``validation.jsonl`` (one row per line, the schema of
:mod:`captain_ros.learn.data.rows`; ``datasets.load_dataset("json", data_files=...)`` reads them),
``stats.json`` (rows; tokens per row, per task and in total; the outcome mix; per task the median
physical actions of the episodes kept, which the RL costs use; every skipped input with its
reason) and ``schema.json``. A corrupt input among good ones is skipped and reported, never
dropped silently; no readable episode at all is an error.
"""

from __future__ import annotations

import json
import math
import statistics
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.harness.episode.context import approx_tokens
from captain_ros.harness.episode.profiles import PROFILES, get_profile
from captain_ros.learn.data.branches import branch_turns
from captain_ros.learn.data.rows import episode_rows, row_key
from captain_ros.learn.data.sources import DatasetError, EpisodeData, expand, read_source
from captain_ros.policy.transformers_chat import flatten_content

OUTCOME_FILTERS = ("strict", "host", "all")
SCHEMA = {
    "id": "str",
    "episode_id": "str",
    "task": "str",
    "seed": "int",
    "split": "train|validation",
    "outcome": "str",
    "profile": "prompt profile (default|compact|helpers|student), one per dataset",
    "source": "str",
    "messages": "OpenAI chat messages (system, user, assistant with tool_calls, tool)",
    "tools": "OpenAI tool schemas",
    "weights": "float per assistant message (0: context only)",
    "requests": "request index t per assistant message (0: earlier context, unlabelled)",
    "context_sha256": "hash of h_t per assistant message",
}


@dataclass
class DatasetReport:
    """What a build produced (also ``stats.json``)."""

    rows: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    episodes: int = 0
    filtered_out: int = 0
    duplicates: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    median_physical_actions: dict[str, float] = field(default_factory=dict)
    profile: str = ""
    finish_weight: float = 1.0
    branch_weight: float = 1.0
    branch_turns: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def split_of(task: str, seed: int, validation_fraction: float) -> str:
    """``validation`` for a deterministic share of seeds (by task and seed), else ``train``."""
    return (
        "validation"
        if zlib.crc32(f"{task}:{seed}".encode()) % 1000 < 1000 * validation_fraction
        else "train"
    )


def _keep(ep: EpisodeData, outcomes: str) -> bool:
    if outcomes == "strict":
        return bool(ep.summary.get("strict_success"))
    if outcomes == "host":
        return bool(ep.summary.get("host_success"))
    return True


def row_tokens(row: dict[str, Any], count: Callable[[str], int] = approx_tokens) -> int:
    """Tokens of a row's text (messages flattened as a text-only student sees them)."""
    total = 0
    for m in row["messages"]:
        total += count(flatten_content(m.get("content")))
        for tc in m.get("tool_calls") or []:
            total += count(tc["function"]["arguments"])
    return total


def build_dataset(
    inputs: Sequence[str | Path],
    out: str | Path,
    outcomes: str = "strict",
    mask_coords: float = 0.0,
    seed: int = 0,
    validation_fraction: float = 0.1,
    count_tokens: Callable[[str], int] | None = None,
    log: Callable[[str], None] = lambda _m: None,
    finish_weight: float = 1.0,
    branch_weight: float = 1.0,
) -> DatasetReport:
    """Build the dataset folder ``out`` from episode folders, evaluation runs and bags.

    Token figures count with ``count_tokens``, else with the counter of the rows' prompt profile
    (SmolLM2's tokenizer for the small profiles); ``finish_weight`` is w_t of a turn calling
    ``finish()``, ``branch_weight`` that of a branch turn, judged over the kept episodes of all
    inputs (see :mod:`captain_ros.learn.data.rows` and :mod:`captain_ros.learn.data.branches`)."""
    if outcomes not in OUTCOME_FILTERS:
        raise DatasetError(
            f"--outcomes must be one of {', '.join(OUTCOME_FILTERS)}, got {outcomes!r}"
        )
    if not 0.0 <= mask_coords <= 1.0:
        raise DatasetError(f"--mask-coords must be in [0, 1], got {mask_coords}")
    if not (math.isfinite(finish_weight) and 0.0 < finish_weight <= 100.0):
        raise DatasetError(f"--finish-weight must be in (0, 100], got {finish_weight}")
    if not (math.isfinite(branch_weight) and 0.0 < branch_weight <= 100.0):
        raise DatasetError(f"--branch-weight must be in (0, 100], got {branch_weight}")
    report = DatasetReport()
    paths: list[Path] = []
    for item in inputs:
        paths += expand(item)  # a missing input is an error of the command itself
    by_split: dict[str, list[dict[str, Any]]] = {"train": [], "validation": []}
    seen: set[str] = set()
    actions: dict[str, list[int]] = defaultdict(list)
    sources: list[tuple[Path, list[EpisodeData]]] = []
    for path in paths:
        try:
            episodes = read_source(path)
        except (DatasetError, OSError, ValueError, KeyError) as exc:
            report.skipped.append({"source": str(path), "error": str(exc)})
            log(f"skipped {path}: {exc}")
            continue
        report.filtered_out += sum(not _keep(ep, outcomes) for ep in episodes)
        sources.append((path, [ep for ep in episodes if _keep(ep, outcomes)]))
    kept = [ep for _, eps in sources for ep in eps]
    branches = dict(zip(map(id, kept), branch_turns([ep.requests for ep in kept]), strict=True))
    for path, episodes in sources:
        try:
            built = [
                (
                    ep,
                    episode_rows(
                        ep, mask_coords, seed, finish_weight, branch_weight, branches[id(ep)]
                    ),
                )
                for ep in episodes
            ]
        except (DatasetError, OSError, ValueError, KeyError) as exc:
            report.skipped.append({"source": str(path), "error": str(exc)})
            log(f"skipped {path}: {exc}")
            continue
        for ep, rows in built:
            report.episodes += 1
            report.branch_turns[ep.task] = report.branch_turns.get(ep.task, 0) + len(
                branches[id(ep)]
            )
            report.outcomes[str(ep.summary.get("outcome", ""))] = (
                report.outcomes.get(str(ep.summary.get("outcome", "")), 0) + 1
            )
            actions[ep.task].append(int(ep.summary.get("physical_actions", 0)))
            split = split_of(ep.task, ep.seed, validation_fraction)
            for row in rows:
                key = row_key(row)
                if key in seen:
                    report.duplicates += 1
                    continue
                seen.add(key)
                by_split[split].append({**row, "split": split})
    profiles = {r["profile"] for rows in by_split.values() for r in rows}
    if len(profiles) > 1:
        raise DatasetError(
            f"the inputs mix prompt profiles ({', '.join(sorted(profiles))}): a "
            "student is trained and deployed with one; build one dataset per profile"
        )
    report.profile = next(iter(profiles), "")
    if not report.episodes:
        first = (
            f"; {report.skipped[0]['source']}: {report.skipped[0]['error']}"
            if report.skipped
            else ""
        )
        raise DatasetError(
            f"no usable episode in {', '.join(map(str, inputs))} "
            f"({len(report.skipped)} skipped, {report.filtered_out} filtered out by "
            f"--outcomes {outcomes}){first}"
        )
    report.finish_weight = finish_weight
    report.branch_weight = branch_weight
    counter = count_tokens or (
        get_profile(report.profile).context.counter()
        if report.profile in PROFILES
        else approx_tokens
    )
    _write(Path(out), by_split, report, counter, actions)
    return report


def _write(
    out: Path,
    by_split: dict[str, list[dict[str, Any]]],
    report: DatasetReport,
    count: Callable[[str], int],
    actions: dict[str, list[int]],
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    per_task: Counter[str] = Counter()
    per_row = []
    for split, rows in by_split.items():
        with (out / f"{split}.jsonl").open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
                n = row_tokens(row, count)
                per_row.append(n)
                per_task[row["task"]] += n
        report.rows[split] = len(rows)
    report.tokens = {
        "total": sum(per_row),
        "per_task": dict(per_task),
        "per_row": {
            "mean": statistics.fmean(per_row) if per_row else 0.0,
            "max": max(per_row, default=0),
            "min": min(per_row, default=0),
        },
    }
    report.median_physical_actions = {t: float(statistics.median(v)) for t, v in actions.items()}
    (out / "stats.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    (out / "schema.json").write_text(json.dumps(SCHEMA, indent=2) + "\n")
