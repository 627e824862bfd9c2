"""Supervised dataset rows, as ``captain learn dataset`` writes them (JSON lines), validated.

One row is one episode segment over which the rendered history is append-only: OpenAI-style
``messages`` (system, user, assistant with ``tool_calls``, tool), the ``tools`` schema, and one
weight w_t per assistant message (``weights``, in order) with its request index (``requests``).
Rows come from files the user points at, so everything is checked and a bad row is reported as
``FILE:LINE: what is wrong`` (:class:`DatasetError`). Torch-free.

Splits: rows whose ``split`` is ``train`` are trained on; ``val``/``validation``/``valid``/``dev``
rows give the validation loss; any other split (``test``, held-out seeds) is never read for
training. Without validation rows, :func:`split_rows` can hold out whole episodes of the
training rows (by a seeded hash of ``episode_id``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.learn.errors import DatasetError

ROLES = ("system", "user", "assistant", "tool")
VAL_SPLITS = ("val", "validation", "valid", "dev")


@dataclass(frozen=True)
class SftRow:
    """One validated dataset row.

    Attributes:
        id: Row id (``task:seed:segment``).
        episode_id: Episode the row belongs to (rows of one episode share it).
        task: Task name.
        split: ``train``, ``val``, ...
        messages: The rendered history, OpenAI message dicts.
        tools: Tool schema (OpenAI function tools) the policy was given.
        weights: w_t of each assistant message, in order (>= 0; 0 masks the turn).
        requests: Request index t of each assistant message (0: earlier context).
        source: ``FILE:LINE`` the row was read from.
        profile: The prompt profile the episode ran with (``default`` | ``compact``).
    """

    id: str
    episode_id: str
    task: str
    split: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    weights: tuple[float, ...]
    requests: tuple[int, ...]
    source: str = ""
    profile: str = "default"

    def __post_init__(self) -> None:
        n = sum(1 for m in self.messages if m.get("role") == "assistant")
        if len(self.weights) != n or len(self.requests) != n:
            raise DatasetError(
                f"{self.source}: {n} assistant messages but {len(self.weights)} "
                f"weights and {len(self.requests)} request indices"
            )

    @property
    def assistant_indices(self) -> tuple[int, ...]:
        """Positions of the assistant messages in ``messages``."""
        return tuple(i for i, m in enumerate(self.messages) if m.get("role") == "assistant")


def _check_content(content: Any, where: str) -> None:
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise DatasetError(
            f"{where}: content must be a string or a list of parts, not {type(content).__name__}"
        )
    for part in content:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise DatasetError(f"{where}: each content part must be an object with a 'type'")


def _check_tool_calls(calls: Any, where: str) -> None:
    if not isinstance(calls, list):
        raise DatasetError(f"{where}: tool_calls must be a list")
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise DatasetError(f"{where}: a tool call needs function.name")
        if not isinstance(fn.get("arguments"), (str, dict)):
            raise DatasetError(f"{where}: tool call arguments must be a JSON string or an object")


def _check_messages(messages: Any, where: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(messages, list) or not messages:
        raise DatasetError(f"{where}: 'messages' must be a non-empty list")
    for k, m in enumerate(messages):
        at = f"{where}: messages[{k}]"
        if not isinstance(m, dict):
            raise DatasetError(f"{at} is not an object")
        if m.get("role") not in ROLES:
            raise DatasetError(f"{at} has role {m.get('role')!r}; valid: {', '.join(ROLES)}")
        _check_content(m.get("content"), at)
        if m.get("tool_calls") is not None:
            _check_tool_calls(m["tool_calls"], at)
    return tuple(messages)


def _numbers(value: Any, n: int, name: str, where: str, kind: type) -> tuple[Any, ...]:
    if value is None and kind is int:
        return tuple(range(1, n + 1))
    if not isinstance(value, list) or len(value) != n:
        got = len(value) if isinstance(value, list) else type(value).__name__
        raise DatasetError(
            f"{where}: '{name}' must be a list with one entry per assistant message "
            f"({n}), got {got}"
        )
    out = []
    for v in value:
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or (kind is int and not float(v).is_integer())
        ):
            raise DatasetError(f"{where}: '{name}' holds {v!r}, not a number")
        if kind is float and (not math.isfinite(v) or v < 0):
            raise DatasetError(f"{where}: weight {v!r} is not a finite number >= 0")
        out.append(kind(v))
    return tuple(out)


def parse_row(obj: Any, where: str) -> SftRow:
    """Validate one decoded JSON line."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: a row must be a JSON object")
    messages = _check_messages(obj.get("messages"), where)
    n = sum(1 for m in messages if m.get("role") == "assistant")
    tools = obj.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise DatasetError(f"{where}: 'tools' must be a list of tool objects")
    row_id = str(obj.get("id") or where)
    return SftRow(
        row_id,
        str(obj.get("episode_id") or row_id),
        str(obj.get("task") or row_id.split(":", 1)[0]),
        str(obj.get("split") or "train"),
        messages,
        tuple(tools),
        _numbers(obj.get("weights"), n, "weights", where, float),
        _numbers(obj.get("requests"), n, "requests", where, int),
        where,
        str(obj.get("profile") or "default"),
    )


def _files(data: str | Path) -> list[Path]:
    path = Path(data)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DatasetError(f"{path}: no such dataset file or folder")
    files = sorted(path.glob("*.jsonl"))
    if not files:
        raise DatasetError(
            f"{path}: no *.jsonl files (expected the output of captain learn dataset)"
        )
    return files


def load_rows(data: str | Path) -> list[SftRow]:
    """All rows of a dataset folder (every ``*.jsonl`` in it) or of one JSONL file."""
    rows: list[SftRow] = []
    for file in _files(data):
        with file.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                where = f"{file}:{lineno}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{where}: not valid JSON ({exc.msg})") from None
                rows.append(parse_row(obj, where))
    if not rows:
        raise DatasetError(f"{data}: the dataset has no rows")
    return rows


def _held_out(episode_id: str, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{episode_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_rows(
    rows: Sequence[SftRow], val_fraction: float = 0.05, seed: int = 0
) -> tuple[list[SftRow], list[SftRow]]:
    """(train rows, validation rows). Rows of other splits are left out.

    When there are no validation rows, about ``val_fraction`` of the training episodes (at least
    one when there are two or more) become validation episodes, chosen by a seeded hash.
    """
    if not 0 <= val_fraction < 1:
        raise DatasetError(f"val_fraction must be in [0, 1), got {val_fraction}")
    train = [r for r in rows if r.split == "train"]
    val = [r for r in rows if r.split in VAL_SPLITS]
    if not train:
        splits = sorted({r.split for r in rows})
        raise DatasetError(f"no rows with split 'train' (splits present: {', '.join(splits)})")
    if val or val_fraction == 0:
        return train, val
    episodes = sorted({r.episode_id for r in train}, key=lambda e: _held_out(e, seed))
    if len(episodes) < 2:
        return train, []
    chosen = set(episodes[: max(1, round(val_fraction * len(episodes)))])
    return [r for r in train if r.episode_id not in chosen], [
        r for r in train if r.episode_id in chosen
    ]
