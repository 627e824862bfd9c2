"""Supervised rows of one episode: every request's history h_t re-rendered as the policy saw it.

The renderer is the harness's own (:func:`captain_ros.harness.episode.context.render` with the episode's
recorded context configuration), and each re-rendered context is checked against the recorded
``context_sha256`` of its request, so a row can only hold what the policy really saw. Rows pack
whole episodes: while the rendered history stays append-only, request t+1's messages extend
request t's messages plus its reply, so one row carries many requests; where truncation,
compaction or the coordinate mask rewrote the history, a new row starts whose earlier assistant
turns are unlabelled context (weight 0).

Per-turn weights (CaPtain section 3.2): w_t = 0 for a turn with repeated execution failures (its
cells and the previous request's only produced errors), for a recovery loop (the same code as an
earlier request of the episode, right after it, or when it or a request since failed: the same
thing tried again), and for every request after a gate-rejected ``finish()``. A repeat after
progress is not a loop: the experts re-perceive and re-verify after acting (stack's tower checked
pair by pair, open_drawer's and insertion's final perception), and masking those turns taught the
first six-task student to skip them and finish unverified;
w_t = 1 otherwise, except that a kept turn calling ``finish()`` gets ``finish_weight``: the finish
is the one decision an episode makes once, against 7-20 other turns, and a student trained with
weight 1 wrote ``place(...)`` where it should finish (11 of 13 failures of the first student);
a kept *branch turn* (:mod:`captain_ros.learn.data.branches`: where the dataset's episodes go on
differently after the same steps, another decision made once) gets ``branch_weight``; a turn that
is both gets the larger. The coordinate mask replaces the pixel coordinates of earlier ``mark_point``
calls in the history with ``<masked>`` (drawn once per call with probability ``mask_coords``),
so a student must read the current image instead of copying them.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from typing import Any

import numpy as np

from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
from captain_ros.harness.record.history import History, ImageRef, Turn
from captain_ros.harness.record.trajectory import messages_sha256, turn_from_record
from captain_ros.learn.data.sources import DatasetError, EpisodeData

MASK = "<masked>"
_FINISH = re.compile(
    r"(?<![\w.])finish\s*\("
)  # a call of finish(), not robot.finish_x( or note_finish(
_POSITIONAL = re.compile(
    r"(mark_point\(\s*[^,()]+,\s*[^,()]+,\s*)(-?\d+(?:\.\d+)?)(\s*,\s*)(-?\d+(?:\.\d+)?)"
)
_KEYWORD = re.compile(r"(mark_point\([^)]*?\b[uv]\s*=\s*)(-?\d+(?:\.\d+)?)")
_RECEIPT = re.compile(r"(mark_point[^\n]*?\()(\d+(?:\.\d+)?)(,\s*)(\d+(?:\.\d+)?)(\))")


def has_coordinates(turn: Turn) -> bool:
    return any(_POSITIONAL.search(c.code) or _KEYWORD.search(c.code) for c in turn.calls)


def mask_turn(turn: Turn) -> Turn:
    """``turn`` with the pixel coordinates of its mark_point calls (code and receipts) masked."""

    def code(text: str) -> str:
        text = _POSITIONAL.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}{MASK}", text)
        while _KEYWORD.search(text):
            text = _KEYWORD.sub(lambda m: f"{m.group(1)}{MASK}", text)
        return text

    def out(text: str) -> str:
        return _RECEIPT.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}{MASK}{m.group(5)}", text)

    return replace(
        turn,
        calls=tuple(replace(c, code=code(c.code)) for c in turn.calls),
        outputs=tuple(replace(o, text=out(o.text)) for o in turn.outputs),
    )


def _errored(rec: dict[str, Any]) -> bool:
    calls = [c for c in rec.get("calls", []) if not c.get("skipped")]
    return bool(calls) and all(
        c.get("error") or c.get("timed_out") or c.get("crashed") for c in calls
    )


def turn_weights(
    requests: list[dict[str, Any]],
    finish_weight: float = 1.0,
    branch_weight: float = 1.0,
    branches: frozenset[int] = frozenset(),
) -> list[float]:
    """w_t of each request (see the module docstring); ``branches``: the 0-based indices of the
    episode's branch turns (:mod:`captain_ros.learn.data.branches`)."""
    weights: list[float] = []
    last_seen: dict[str, int] = {}  # code -> the last request that ran it
    failed: list[bool] = []  # request k errored
    rejected = False
    for k, rec in enumerate(requests):
        code = "\n".join(c.get("code", "") for c in rec.get("calls", []))
        failed.append(_errored(rec))
        repeated_failure = failed[k] and k > 0 and failed[k - 1]
        j = last_seen.get(code) if code.strip() else None
        loop = j is not None and (j == k - 1 or any(failed[j:k]))
        kept = 0.0 if (repeated_failure or loop or rejected) else 1.0
        factor = max(
            finish_weight if _FINISH.search(code) else 1.0,
            branch_weight if k in branches else 1.0,
        )
        weights.append(kept * factor)
        last_seen[code] = k
        rejected = rejected or any(not g.get("accepted", True) for g in rec.get("gate", []))
    return weights


def _context(start: dict[str, Any]) -> ContextConfig:
    fields = set(ContextConfig.__dataclass_fields__)
    return ContextConfig(**{k: v for k, v in (start.get("context") or {}).items() if k in fields})


def episode_rows(
    ep: EpisodeData,
    mask_coords: float = 0.0,
    seed: int = 0,
    finish_weight: float = 1.0,
    branch_weight: float = 1.0,
    branches: frozenset[int] = frozenset(),
) -> list[dict[str, Any]]:
    """The rows of ``ep`` (schema in docs/learn_dataset.md); :class:`DatasetError` when a
    re-rendered context does not match the recorded hash."""
    start = ep.start
    profile = str(start.get("profile") or "default")  # recorded since profiles exist
    turns = [turn_from_record(r) for r in ep.requests]
    initial = tuple(ImageRef.from_dict(i) for i in start.get("initial_images", []))
    cfg = _context(start)
    tools = start.get("tools") or [PYTHON_TOOL_SCHEMA]
    rng = np.random.default_rng(
        [int(hashlib.sha256(ep.task.encode()).hexdigest()[:8], 16), ep.seed, seed]
    )
    masked = {k for k, t in enumerate(turns) if has_coordinates(t) and rng.random() < mask_coords}
    weights = turn_weights(ep.requests, finish_weight, branch_weight, branches)
    episode_id = f"{ep.task}:{ep.seed}:{hashlib.sha256(ep.source.encode()).hexdigest()[:8]}"
    rows: list[dict[str, Any]] = []
    current: list[dict[str, Any]] | None = None
    meta: dict[str, list[Any]] = {}
    for k, rec in enumerate(ep.requests):
        history = History(start["system"], start["task_md"], initial, tuple(turns[:k]))
        msgs = render(history, cfg)
        if messages_sha256(msgs) != rec["context_sha256"]:
            raise DatasetError(
                f"{ep.source}: request {rec['t']}: the re-rendered context does not "
                "match the recorded context_sha256 (a different renderer or config)"
            )
        if any(j < k for j in masked):  # what the row shows: earlier coordinates masked
            seen = tuple(mask_turn(t) if j in masked else t for j, t in enumerate(turns[:k]))
            msgs = render(replace(history, turns=seen), cfg)
        reply = render(History("", "", (), (turns[k],)), cfg)[2]  # the assistant message of turn k
        if current is not None and msgs[: len(current)] == current:
            current = [*msgs, reply]
        else:
            if current is not None:
                rows.append(_row(ep, episode_id, len(rows), current, meta, tools, profile))
            current = [*msgs, reply]
            meta = {
                "weights": [0.0] * sum(m["role"] == "assistant" for m in msgs),
                "requests": [0] * sum(m["role"] == "assistant" for m in msgs),  # 0: context
                "context_sha256": [None] * sum(m["role"] == "assistant" for m in msgs),
            }
        meta["weights"].append(weights[k])
        meta["requests"].append(int(rec["t"]))
        meta["context_sha256"].append(rec["context_sha256"])
    if current is not None:
        rows.append(_row(ep, episode_id, len(rows), current, meta, tools, profile))
    return rows


def _row(
    ep: EpisodeData,
    episode_id: str,
    index: int,
    messages: list[dict[str, Any]],
    meta: dict[str, list[Any]],
    tools: list[dict[str, Any]],
    profile: str,
) -> dict[str, Any]:
    return {
        "id": f"{episode_id}:{index}",
        "episode_id": episode_id,
        "task": ep.task,
        "seed": ep.seed,
        "split": "",
        "outcome": str(ep.summary.get("outcome", "")),
        "profile": profile,
        "source": ep.source,
        "messages": messages,
        "tools": tools,
        "weights": list(meta["weights"]),
        "requests": list(meta["requests"]),
        "context_sha256": list(meta["context_sha256"]),
    }


def row_key(row: dict[str, Any]) -> str:
    """Content hash of a row (deduplication)."""
    return hashlib.sha256(
        json.dumps([row["messages"], row["weights"]], sort_keys=True).encode()
    ).hexdigest()
