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
fixed *corpus*, a shipped student's ``drafts.txt`` (replies of its training data; llama.cpp's
lookup example keeps such a static n-gram cache). The drafts depend only on the corpus and the
request, never on what the process ran before, so a seeded episode is reproduced exactly by any
process (a memory of earlier replies shared across episodes was tried and dropped: it made the
numerics of a request depend on the process's history).
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
    """

    max_draft: int = 8
    ngram_min: int = 3
    ngram_max: int = 6

    def __post_init__(self) -> None:
        if self.max_draft < 0:
            raise InvalidArgumentError(f"max_draft must be >= 0, got {self.max_draft}")
        if not 1 <= self.ngram_min <= self.ngram_max:
            raise InvalidArgumentError(
                f"need 1 <= ngram_min <= ngram_max, got {self.ngram_min}, {self.ngram_max}"
            )


class LookupDrafter:
    """Drafts continuations from a request's tokens and a fixed corpus.

    Args:
        settings: How to search.
        corpus: Tokens searched before the request's (a shipped student's ``drafts.txt``,
            :func:`~captain_ros.policy.students.write_drafts`).
    """

    def __init__(self, settings: LookupSettings | None = None, corpus: Sequence[int] = ()) -> None:
        self.settings = settings or LookupSettings()
        self._corpus = np.asarray(corpus, dtype=np.int64)
        self._hay = self._corpus  # corpus + the request's prompt
        self.drafted = 0  # tokens drafted and tokens accepted, over the engine's life
        self.accepted = 0

    def start(self, prompt: Sequence[int]) -> None:
        """A new request: its prompt is searched with the corpus until :meth:`start` is called
        again."""
        self._hay = np.concatenate([self._corpus, np.asarray(prompt, dtype=np.int64)])

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
