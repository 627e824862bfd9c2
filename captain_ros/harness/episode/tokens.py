"""Token counters for context limits, by name, so that a record can say how it was counted.

A context limit is only a limit if it is counted in the tokens of the model that reads the
prompt. ``approx`` is the model-free estimate (one token per 4 characters) that remote models and
old records use; ``smollm2`` counts with SmolLM2-135M-Instruct's own tokenizer, which splits
receipts about 1.6x finer than the estimate (prompts counted with the estimate reached 8,540
SmolLM2 tokens against its 8,192 positions).

The SmolLM2 tokenizer ships in the package (``data/tokenizers``, gzipped ``tokenizer.json``,
exported from the packaged GGUF, see the README there) and is read with the ``tokenizers``
library, so counting needs neither torch nor transformers. The counter's name is a field of
:class:`~captain_ros.harness.episode.context.ContextConfig`, recorded in every episode's start line:
datasets, replays and RE-0 decision points re-render a history with the counter it was run with.
"""

from __future__ import annotations

import functools
import gzip
import math
from collections.abc import Callable
from pathlib import Path

from captain_ros.core.errors import UnknownNameError

TOKENIZER_DIR = Path(__file__).resolve().parents[2] / "data" / "tokenizers"  # captain_ros/data
TOKENIZER_FILES = {"smollm2": "smollm2-135m-instruct.json.gz"}
"""Packaged tokenizers by counter name."""

COUNTERS = ("approx", *TOKENIZER_FILES)


def approx_tokens(text: str) -> int:
    """Deterministic token estimate: one token per 4 characters (rounded up)."""
    return math.ceil(len(text) / 4)


@functools.cache
def _tokenizer(name: str):  # noqa: ANN202 - tokenizers.Tokenizer (imported lazily)
    from tokenizers import Tokenizer

    raw = gzip.decompress((TOKENIZER_DIR / TOKENIZER_FILES[name]).read_bytes())
    return Tokenizer.from_str(raw.decode("utf-8"))


@functools.cache
def token_counter(name: str) -> Callable[[str], int]:
    """The counter called ``name`` (one of :data:`COUNTERS`): text -> tokens, no special tokens.

    Raises :class:`~captain_ros.core.errors.UnknownNameError` for another name.
    """
    if name == "approx":
        return approx_tokens
    if name not in TOKENIZER_FILES:
        raise UnknownNameError("token counter", name, list(COUNTERS))
    tokenizer = _tokenizer(name)

    @functools.lru_cache(maxsize=8192)  # compaction re-counts the same messages turn after turn
    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    return count
