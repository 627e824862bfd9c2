"""The engine interface a local student policy runs on.

A :class:`ChatEngine` turns rendered chat messages (the history the harness builds) into one
sampled reply, a :class:`~captain_ros.policy.transformers_chat.Generation`: the text, the prompt
and reply token ids, the log-probabilities of the reply's tokens, and how much of the prompt came
from the engine's kept prefix. Every engine renders with the one renderer
(:func:`~captain_ros.policy.chat_render.render_chat`), keeps the episode's prefix across requests
(only the new tokens of a request are prefilled; :meth:`ChatEngine.reset` forgets it), is
deterministic under its seed with the thread count its caller sets, and says what it is in
:meth:`ChatEngine.describe` (recorded in every episode's summary).

Engines: ``llamacpp`` (:mod:`~captain_ros.policy.engines.llamacpp`, a GGUF file through
llama.cpp) and ``transformers`` (:mod:`~captain_ros.policy.engines.transformers`, eager PyTorch,
the training and reference path).
"""

from __future__ import annotations

import abc
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from captain_ros.core.errors import CaptainError
from captain_ros.policy.openai_client import PYTHON_TOOL
from captain_ros.policy.transformers_chat import Generation

__all__ = [
    "ChatEngine",
    "EngineSettings",
    "Generation",
    "ModelFileError",
    "default_threads",
    "episode_seed",
]


class ModelFileError(CaptainError):
    """A model file is missing, unreadable or not a model the engine can load (one line)."""


def default_threads() -> int:
    """Threads for an engine whose caller named none: ``$OMP_NUM_THREADS`` (evaluation workers set
    it to 1 so that parallel workers do not oversubscribe the cores), else every core."""
    try:
        n = int(os.environ.get("OMP_NUM_THREADS", "0"))
    except ValueError:
        n = 0
    return n if n > 0 else (os.cpu_count() or 1)


@dataclass(frozen=True)
class EngineSettings:
    """Sampling and runtime settings shared by the engines.

    Attributes:
        max_new_tokens: Reply length limit [tokens].
        temperature: 0 = greedy; otherwise the sampling temperature.
        top_p: Nucleus mass kept when sampling (1 = all).
        seed: Seed of request 0; request ``k`` of the engine samples with ``seed + k``. A
            policy re-seeds its engine per episode with :func:`episode_seed` of this seed.
        threads: CPU threads (None: :func:`default_threads`).
        reuse_prefix: Keep the prompt's prefix across requests.
    """

    max_new_tokens: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    threads: int | None = None
    reuse_prefix: bool = True

    def __post_init__(self) -> None:
        from captain_ros.core.errors import InvalidArgumentError

        if self.max_new_tokens < 1:
            raise InvalidArgumentError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if not self.temperature >= 0.0:
            raise InvalidArgumentError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise InvalidArgumentError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.threads is not None and self.threads < 1:
            raise InvalidArgumentError(f"threads must be >= 1, got {self.threads}")

    def decoding(self) -> dict[str, float | int]:
        """How replies are decoded, as an episode records it (``describe()``)."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_new_tokens": self.max_new_tokens,
        }


def episode_seed(base: int, task: str, seed: int) -> int:
    """The sampling seed of one episode: ``base`` (the settings' seed) mixed with the task and
    the episode's seed. Sampled episodes then draw independent random numbers, and each one is
    reproduced alone, whatever ran before it in the process (request ``k`` samples with this
    ``+ k``). A 31-bit value, the same on every platform (SHA-256, not Python's ``hash``)."""
    digest = hashlib.sha256(f"{int(base)}:{task}:{int(seed)}".encode()).digest()
    return int.from_bytes(digest[:4], "little") >> 1


class ChatEngine(abc.ABC):
    """One loaded model answering the chat requests of a policy, one request at a time."""

    name: str = "engine"

    @abc.abstractmethod
    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
    ) -> Generation:
        """Sample one reply to ``messages`` (with the tool schema ``tools``)."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget the kept prefix (a new episode, a restart)."""

    def describe(self) -> dict[str, Any]:
        """What runs the model, for the episode's record (engine name, model file, threads...)."""
        return {"engine": self.name}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model."""
