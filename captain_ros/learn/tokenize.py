"""Rows -> token sequences with assistant-only labels and per-turn weights.

For every assistant message a_t of a row the deployment renderer
(:func:`~captain_ros.policy.chat_render.render_chat`) gives the prompt P_t (the history before it,
ending with the generation prompt: exactly what the policy is sent at request t) and the text with
the finished turn. The supervised span of turn t is what follows P_t up to the end of the turn,
its end-of-turn token included and the template's trailing whitespace excluded: the agent's
reasoning and tool-call markup. Everything else (system, TASK.md, tool outputs, template
scaffolding) is context with label -100; a turn with w_t = 0 is context too, and the tokens of a
turn with w_t > 0 carry w_t.

Packing: while the template is append-only (P_{t+1} starts with the text up to the end of a_t),
turns form one chain, and a chain is tokenized once: a whole episode is one sequence and costs one
forward/backward. A chain longer than ``max_len`` tokens is cut into windows at turn boundaries:
the first window starts at the beginning; a later window ends at the end of its last turn and
reaches back ``max_len`` tokens, so its turns keep at least ``max_len // 2`` tokens of history as
unlabelled prefix (left-truncated, counted in ``truncated_sequences``). A single turn longer than
``max_len`` is dropped and counted. Every turn's prompt tokens are checked against tokenizing
P_t on its own (the deployment tokenization); mismatches are counted in ``parity_mismatches``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from captain_ros.learn.rows import DatasetError, SftRow
from captain_ros.policy.chat_render import render_chat

IGNORE = -100


class TemplateError(DatasetError):
    """The chat template does not render an assistant turn as a continuation of its prompt."""


@dataclass(frozen=True)
class TokenizedSequence:
    """One training sequence: ``labels`` is -100 off the supervised spans, ``weights`` is w_t on them."""

    input_ids: tuple[int, ...]
    labels: tuple[int, ...]
    weights: tuple[float, ...]
    row_id: str
    requests: tuple[int, ...]
    truncated: bool = False

    def __post_init__(self) -> None:
        if not len(self.input_ids) == len(self.labels) == len(self.weights):
            raise ValueError("input_ids, labels and weights must have the same length")

    @property
    def supervised_tokens(self) -> int:
        return sum(1 for lab in self.labels if lab != IGNORE)


@dataclass
class TokenizeStats:
    """Counts over a tokenized dataset (written to the run's ``sft_config.json``)."""

    rows: int = 0
    sequences: int = 0
    tokens: int = 0
    supervised_tokens: int = 0
    turns: int = 0
    turns_masked: int = 0
    turns_too_long: int = 0
    truncated_sequences: int = 0
    template_breaks: int = 0
    parity_mismatches: int = 0
    rows_without_labels: int = 0
    max_sequence_tokens: int = 0
    per_task_tokens: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class _Turn:
    start: int  # character offset where the supervised span begins (end of P_t)
    end: int  # character offset where it ends
    weight: float
    request: int


def _chains(tokenizer: Any, row: SftRow, stats: TokenizeStats) -> list[tuple[str, list[_Turn]]]:
    """Append-only chains of a row: (text up to the last turn's end, turns)."""
    chains: list[tuple[str, list[_Turn]]] = []
    text = ""
    turns: list[_Turn] = []
    msgs, tools = row.messages, row.tools or None
    for k, idx in enumerate(row.assistant_indices):
        prompt = render_chat(tokenizer, msgs[:idx], tools, add_generation_prompt=True)
        full = render_chat(tokenizer, msgs[: idx + 1], tools, add_generation_prompt=False)
        if not full.startswith(prompt):
            raise TemplateError(
                f"{row.source}: the chat template renders assistant message {idx} "
                "differently from its generation prompt; cannot label it"
            )
        end = len(full.rstrip())
        if end <= len(prompt):
            raise DatasetError(f"{row.source}: assistant message {idx} renders to nothing")
        if turns and not prompt.startswith(text):
            stats.template_breaks += 1
            chains.append((text, turns))
            turns = []
        text = full[:end]
        turns.append(_Turn(len(prompt), end, row.weights[k], row.requests[k]))
    if turns:
        chains.append((text, turns))
    return chains


def plan_windows(
    spans: Sequence[tuple[int, int]], max_len: int
) -> tuple[list[tuple[int, int, list[int]]], list[int]]:
    """Token windows ``(start, end, span indices)`` covering ``spans`` (increasing ``(p, e)``
    token ranges), each at most ``max_len`` long, and the indices of spans longer than that."""
    windows: list[tuple[int, int, list[int]]] = []
    too_long: list[int] = []
    j, n = 0, len(spans)
    while j < n:
        p, e = spans[j]
        if e - p > max_len:
            too_long.append(j)
            j += 1
            continue
        k = j
        if e <= max_len:
            while k + 1 < n and spans[k + 1][1] <= max_len:
                k += 1
            windows.append((0, spans[k][1], list(range(j, k + 1))))
        else:
            budget = max(max_len // 2, e - p)
            while k + 1 < n and spans[k + 1][1] - p <= budget:
                k += 1
            end = spans[k][1]
            windows.append((end - max_len, end, list(range(j, k + 1))))
        j = k + 1
    return windows, too_long


def _encode(tokenizer: Any, text: str) -> tuple[list[int], list[int]]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return list(enc["input_ids"]), [int(s) for s, _ in enc["offset_mapping"]]


def tokenize_row(
    tokenizer: Any, row: SftRow, max_len: int, stats: TokenizeStats | None = None
) -> list[TokenizedSequence]:
    """Training sequences of one row (see the module docstring)."""
    if max_len < 2:
        raise ValueError("max_len must be at least 2 tokens")
    stats = stats if stats is not None else TokenizeStats()
    stats.rows += 1
    out: list[TokenizedSequence] = []
    for text, turns in _chains(tokenizer, row, stats):
        ids, starts = _encode(tokenizer, text)
        stats.turns += len(turns)
        labelled = [t for t in turns if t.weight > 0]
        stats.turns_masked += len(turns) - len(labelled)
        spans = []
        for t in labelled:
            p, e = bisect.bisect_left(starts, t.start), bisect.bisect_left(starts, t.end)
            prompt_ids = tokenizer(text[: t.start], add_special_tokens=False)["input_ids"]
            if list(prompt_ids) != ids[:p]:
                stats.parity_mismatches += 1
            spans.append((p, e))
        windows, too_long = plan_windows(spans, max_len)
        stats.turns_too_long += len(too_long)
        for start, end, members in windows:
            labels = [IGNORE] * (end - start)
            weights = [0.0] * (end - start)
            for m in members:
                p, e = spans[m]
                for i in range(p, e):
                    labels[i - start] = ids[i]
                    weights[i - start] = labelled[m].weight
            out.append(
                TokenizedSequence(
                    tuple(ids[start:end]),
                    tuple(labels),
                    tuple(weights),
                    row.id,
                    tuple(labelled[m].request for m in members),
                    truncated=start > 0,
                )
            )
    if not any(s.supervised_tokens for s in out):
        stats.rows_without_labels += 1
        return []
    task = row.task
    for s in out:
        stats.sequences += 1
        stats.tokens += len(s.input_ids)
        stats.supervised_tokens += s.supervised_tokens
        stats.truncated_sequences += int(s.truncated)
        stats.max_sequence_tokens = max(stats.max_sequence_tokens, len(s.input_ids))
        stats.per_task_tokens[task] = stats.per_task_tokens.get(task, 0) + len(s.input_ids)
    return out


def tokenize_rows(
    tokenizer: Any, rows: Iterable[SftRow], max_len: int
) -> tuple[list[TokenizedSequence], TokenizeStats]:
    """All training sequences of ``rows`` and the counts."""
    stats = TokenizeStats()
    seqs: list[TokenizedSequence] = []
    for row in rows:
        seqs += tokenize_row(tokenizer, row, max_len, stats)
    return seqs, stats
