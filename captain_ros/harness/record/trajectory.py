"""``trajectory.jsonl``: everything needed to rebuild each history h_t of an episode.

Lines (JSON objects, in order):

- ``{"type": "episode_start", task, seed, system, task_md, initial_images, budgets, context, tools,
  session: {hash_seed, rng_seed}}`` (an episode resumed at a decision point also has
  ``resumed_from: {folder, t}``);
- one ``{"type": "request", "t", reasoning, content, tool_calls_raw, calls: [{call_id, code, output,
  receipts, receipts_total, images, robot_calls, error, timed_out, crashed, violations, duration_s,
  call_s, ns_digest}], malformed, notice, budget, gate, model_s, backend_s, harness_s, prompt_tokens,
  completion_tokens, context_sha256}`` per request (``context_sha256`` hashes the messages the
  policy saw, so a rebuild can be verified; ``ns_digest`` digests the session's variables after
  the cell, :mod:`captain_ros.harness.sandbox.ns_digest`);
- ``{"type": "episode_end", "summary": {...}}``.

:func:`load_history` rebuilds the :class:`~captain_ros.harness.record.history.History`;
``render(history.upto(t))`` then gives the exact messages of request ``t``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import Trajectory, read_jsonl
from captain_ros.core.errors import RecordError
from captain_ros.core.result import _jsonable
from captain_ros.harness.record.history import History, ImageRef, ToolCall, ToolOutput, Turn


def messages_sha256(messages: list[dict[str, Any]]) -> str:
    """Stable hash of rendered chat messages."""
    text = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()  # lone surrogates too


class TrajectoryWriter:
    """Appends JSON lines to ``<episode>/trajectory.jsonl`` (flushed per line)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # a lone surrogate (policy text, cell output) is written as its JSON escape: read back, it is
        # the same string; strict UTF-8 would end the episode on it
        self._f = self.path.open("w", encoding="utf-8", errors="backslashreplace")

    def write(self, record: dict[str, Any]) -> None:
        self._f.write(json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n")
        self._f.flush()

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``trajectory.jsonl`` (:func:`captain_ros.core.episode_folder.read_jsonl`:
    a missing file or a line that is not a JSON object is a ``RecordError`` naming it)."""
    return read_jsonl(Path(path))


def turn_from_record(rec: dict[str, Any]) -> Turn:
    calls = tuple(ToolCall(c["call_id"], c["code"]) for c in rec.get("calls", []))
    outputs = tuple(
        ToolOutput(
            c["call_id"], c["output"], tuple(ImageRef.from_dict(i) for i in c.get("images", []))
        )
        for c in rec.get("calls", [])
    )
    return Turn(int(rec["t"]), rec.get("reasoning") or "", calls, outputs, rec.get("notice") or "")


def load_history(path: str | Path) -> History:
    """The full history of a logged episode (use ``.upto(t)`` for request ``t``)."""
    lines = Trajectory.split(read_records(path))
    start = lines.start
    if start is None:
        raise RecordError(f"{path}: no episode_start line")
    turns = tuple(turn_from_record(r) for r in lines.requests)
    return History(
        start["system"],
        start["task_md"],
        tuple(ImageRef.from_dict(i) for i in start.get("initial_images", [])),
        turns,
    )
