"""RE-OPD corpora as Learning I's SFT rows (RE-0 sections 3.3-3.4).

One row per kept trajectory, packed like ``captain learn dataset`` packs an episode
(:func:`captain_ros.learn.data.rows.episode_rows`: the harness's own renderer, every request's
context checked against its recorded ``context_sha256``, a new row only where the rendered
history stops being append-only). Only the per-turn weights differ: RE-OPD's hard estimator for a
black-box teacher (:func:`~captain_ros.research.re0.opd.reopd_weights`),

    a turn the seat wrote (g = 0 at its history)   ``retention`` (default 1)
    a turn of an admitted teacher segment          lambda * g * [LCB]+

so ``captain learn sft`` minimises retention on the seat's tokens plus
lambda * g * w * (-log pi_theta(delta | h)) on the verified repairs. :func:`captain_ros.learn.rows.load_rows`
reads the rows unchanged.

Corpora (:func:`keep_row`):

- **cold** (the teacher in the seat): the verified-completed trajectories, i.e. successful and
  every repair in them admitted (the teacher's own successes, and its failures whose repairs were
  verified and then completed);
- **refine** (the student in the seat): the hybrid trajectories mu ran through an admitted
  repair (the student's own turns retained, the repair weighted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from captain_ros.learn.data.rows import episode_rows
from captain_ros.learn.data.sources import read_folder
from captain_ros.research.re0.opd import (
    DEFAULT_LAMBDA,
    AdmittedEvent,
    TurnSource,
    keep_cold_trajectory,
    reopd_weights,
)

CORPORA = ("cold", "refine")


def turn_sources(turns: Sequence[Mapping[str, Any]], n_requests: int) -> list[TurnSource]:
    """The hybrid policy's turn records (``extra["turns"]``) as one source per request (a request
    without a record, e.g. a plain seat episode's, is the seat's)."""
    by_t = {int(x["t"]): TurnSource(str(x["source"]), x.get("event_id")) for x in turns if "t" in x}
    return [by_t.get(t, TurnSource("seat")) for t in range(1, n_requests + 1)]


def keep_row(
    corpus: str, success: bool, sources: Sequence[TurnSource], events: Mapping[str, AdmittedEvent]
) -> bool:
    """Whether a trajectory enters ``corpus`` (module docstring)."""
    if corpus == "cold":
        return keep_cold_trajectory(success, sources, events)
    if corpus == "refine":
        return any(
            s.source == "repair"
            and events.get(s.event_id or "") is not None
            and events[s.event_id or ""].admitted
            for s in sources
        )
    raise ValueError(f"unknown corpus {corpus!r}; valid: {', '.join(CORPORA)}")


def trajectory_rows(
    folder: str | Path,
    sources: Sequence[TurnSource],
    events: Mapping[str, AdmittedEvent],
    corpus: str,
    lam: float = DEFAULT_LAMBDA,
    retention: float = 1.0,
) -> list[dict[str, Any]]:
    """The SFT rows of one trajectory folder with RE-OPD weights (one row unless the context was
    compacted; the earlier turns of a later row are context, weight 0)."""
    ep = read_folder(Path(folder))
    if len(sources) != len(ep.requests):
        raise ValueError(f"{folder}: {len(ep.requests)} requests but {len(sources)} turn sources")
    per_t = dict(
        zip(
            (int(r["t"]) for r in ep.requests),
            reopd_weights(sources, events, lam, retention),
            strict=True,
        )
    )
    rows = episode_rows(ep)
    for row in rows:
        row["weights"] = [per_t[t] if t > 0 else 0.0 for t in row["requests"]]
        row["split"] = "train"
        row["corpus"] = corpus
        row["turn_sources"] = [
            per_source(sources[t - 1]) if t > 0 else "context" for t in row["requests"]
        ]
    return rows


def per_source(source: TurnSource) -> str:
    return source.source if source.event_id is None else f"{source.source}:{source.event_id}"
