"""Prompt-lookup drafting for the llama.cpp engine: draft tokens a verification batch can accept.

A student's replies repeat text it has seen: the helper calls and reasoning lines of its training
data come back on every seed of a task, and much of a reply repeats the episode's own context.
Prompt-lookup decoding (A. Saxena, "prompt-lookup-decoding", 2023; llama.cpp's ``lookup``
example and ``llama_cpp.llama_speculative.LlamaPromptLookupDecoding``) drafts the continuation of
the latest earlier occurrence of the last few tokens; the engine evaluates the drafted tokens in
one batch and keeps those the model itself would have picked (exact: every kept token is the
model's own choice at its position, so the reply does not change, only the number of decode
calls).

:class:`LookupDrafter` differs from llama-cpp-python's class in two ways, both measured on
recorded student episodes (docs/engines.md): it takes the *latest* occurrence (the last request
predicts the next one better than the first), and besides the request's own tokens it searches a
bounded *memory* of the engine's earlier replies, across requests and episodes (llama.cpp's
lookup example keeps such a dynamic n-gram cache too). Context lookup alone saved ~10 % of decode
calls; with the memory, ~2x.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from captain_ros.core.errors import InvalidArgumentError

__all__ = ["LookupDrafter", "LookupSettings"]


@dataclass(frozen=True)
class LookupSettings:
    """How the drafter searches.

    Attributes:
        max_draft: Most tokens drafted per step (0 disables drafting).
        ngram_min: Shortest suffix [tokens] that must match an earlier occurrence.
        ngram_max: Longest suffix tried first [tokens].
        memory_tokens: Tokens of earlier replies kept for the search (oldest dropped first).
    """

    max_draft: int = 8
    ngram_min: int = 3
    ngram_max: int = 6
    memory_tokens: int = 8192

    def __post_init__(self) -> None:
        if self.max_draft < 0:
            raise InvalidArgumentError(f"max_draft must be >= 0, got {self.max_draft}")
        if not 1 <= self.ngram_min <= self.ngram_max:
            raise InvalidArgumentError(
                f"need 1 <= ngram_min <= ngram_max, got {self.ngram_min}, {self.ngram_max}"
            )
        if self.memory_tokens < 0:
            raise InvalidArgumentError(f"memory_tokens must be >= 0, got {self.memory_tokens}")


_SHARED: dict[str, list[int]] = {}  # memories by model, shared by the engines of a process


class LookupDrafter:
    """Drafts continuations from a request's tokens and a memory of earlier replies.

    Args:
        settings: How to search.
        shared: A key (the model's identity): drafters of the same key in one process share their
            memory, so an evaluation worker or a policy node that builds a fresh engine per episode
            keeps what the model wrote before. None: a memory of its own.
        corpus: Tokens searched before the memory, for the first request of a process: a shipped
            student's ``drafts.txt`` (replies of its training data,
            :func:`~captain_ros.policy.students.write_drafts`).
    """

    def __init__(
        self,
        settings: LookupSettings | None = None,
        shared: str | None = None,
        corpus: Sequence[int] = (),
    ) -> None:
        self.settings = settings or LookupSettings()
        self._corpus = [int(t) for t in corpus]  # fixed text searched first (a student's drafts)
        self._memory: list[int] = [] if shared is None else _SHARED.setdefault(shared, [])
        self._hay = np.zeros(0, dtype=np.int64)  # memory + the request's prompt
        self.drafted = 0  # tokens drafted and tokens accepted, over the engine's life
        self.accepted = 0

    def remember(self, reply: Sequence[int]) -> None:
        """Add a finished reply to the memory (the oldest tokens go past ``memory_tokens``)."""
        keep = self.settings.memory_tokens
        if keep and reply:
            self._memory[:] = (self._memory + [int(t) for t in reply])[-keep:]

    def start(self, prompt: Sequence[int]) -> None:
        """A new request: its prompt is searched with the memory until :meth:`start` is called again."""
        self._hay = np.asarray([*self._corpus, *self._memory, *prompt], dtype=np.int64)

    def draft(self, reply: Sequence[int], limit: int) -> list[int]:
        """At most ``limit`` tokens that followed the latest earlier occurrence of the last
        ``ngram_max``..``ngram_min`` tokens of prompt + ``reply`` (the longest suffix that
        occurs wins); ``[]`` when none occurs or drafting is off."""
        s = self.settings
        limit = min(limit, s.max_draft)
        if limit <= 0:
            return []
        seq = np.concatenate([self._hay, np.asarray(reply, dtype=np.int64)])
        n = len(seq)
        if n <= s.ngram_min:
            return []
        # candidate ends: earlier positions holding the last token, newest first
        ends = np.flatnonzero(seq[: n - 1] == seq[-1])[::-1]
        if ends.size == 0:
            return []
        match = np.ones(ends.size, dtype=np.int64)  # suffix tokens matched at each candidate
        alive = np.ones(ends.size, dtype=bool)
        for j in range(1, s.ngram_max):
            ok = alive & (ends - j >= 0)
            ok[ok] = seq[ends[ok] - j] == seq[n - 1 - j]
            match += ok
            alive = ok
            if not alive.any():
                break
        best = int(match.max())
        if best < s.ngram_min:
            return []
        end = int(ends[int(np.argmax(match == best))])  # the newest among the longest
        return [int(t) for t in seq[end + 1 : end + 1 + limit]]

    def record(self, drafted: int, accepted: int) -> None:
        """Count one verification step (the engine's acceptance rate, for its record)."""
        self.drafted += drafted
        self.accepted += accepted
