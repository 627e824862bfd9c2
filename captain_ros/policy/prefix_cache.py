"""Keeping a model's KV cache across the requests of an episode.

The rendered history is append-only between compactions, so request t+1's prompt usually extends
request t's prompt plus its reply: only the new tokens need a forward pass. :class:`PrefixCache`
remembers the token ids its cache holds; for a new prompt it keeps the longest common prefix of
those ids and the prompt (cropping the cache there) and lets ``generate`` prefill the rest. A
prompt that diverges early (compaction, an image dropped from the history, a reply the harness
re-rendered differently from what the model emitted) therefore costs a recompute from the point of
divergence only, and a prompt with nothing in common costs a full prefill, as without a cache.
At least one prompt token is always left to prefill, because ``generate`` needs the logits of the
last prompt position.

Only ``transformers`` caches with ``crop`` and ``get_seq_length`` (``DynamicCache``) are reused; a
cache that cannot be cropped (a sliding-window or linear-attention layer past its window) is
dropped and the prompt is prefilled in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token-id sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass(frozen=True)
class CacheUse:
    """How one prompt used the cache: ``reused`` tokens came from it, ``prefilled`` were computed."""

    reused: int
    prefilled: int


class PrefixCache:
    """A KV cache plus the token ids it covers.

    Args:
        enabled: False turns reuse off (every prompt is prefilled in full).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.cache: Any = None
        self.ids: list[int] = []
        self.reused_total = 0
        self.prefilled_total = 0

    def reset(self) -> None:
        """Forget the cache (a new episode, or after an error)."""
        self.cache = None
        self.ids = []

    def take(self, prompt_ids: Sequence[int]) -> tuple[Any, CacheUse]:
        """The cache to pass to ``generate`` for ``prompt_ids`` (None: start afresh), and its use."""
        keep = (
            common_prefix_len(self.ids, prompt_ids)
            if self.enabled and self.cache is not None
            else 0
        )
        keep = min(keep, len(prompt_ids) - 1)
        cache = None
        if keep > 0:
            try:
                extra = int(self.cache.get_seq_length()) - keep
                if extra > 0:
                    self.cache.crop(-extra)  # transformers 5: a negative count removes tokens
                cache = self.cache
            except (AttributeError, NotImplementedError, RuntimeError, ValueError, TypeError):
                keep = 0
        if cache is None:
            keep = 0
        self.reset()  # the cache now belongs to the running generation
        use = CacheUse(keep, len(prompt_ids) - keep)
        self.reused_total += use.reused
        self.prefilled_total += use.prefilled
        return cache, use

    def store(self, cache: Any, ids: Sequence[int]) -> None:
        """Keep ``cache`` after a generation over ``ids`` (prompt + generated tokens)."""
        if not self.enabled or cache is None:
            return
        try:
            n = int(cache.get_seq_length())
        except (AttributeError, TypeError):
            return
        self.cache = cache
        self.ids = list(ids[:n])
