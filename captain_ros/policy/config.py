"""The policy's part of an episode's configuration: its spec and options (typed, validated)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.validate import check_choice, check_limit, check_types

ENGINES = ("auto", "llamacpp", "transformers")
GRAMMARS = ("none", "envelope")


@dataclass(frozen=True)
class PolicyConfig:
    """The policy and its options (``None``: the policy's own default).

    Attributes:
        spec: ``scripted``, ``scripted-faulty[:...]``, ``openai``, ``transformers``,
            ``student[:NAME]``, ``replay:FILE`` (:mod:`captain_ros.policy.factory`).
        base_url / model: OpenAI-compatible endpoint and served name (openai).
        model_folder: Local model folder (transformers; a student's folder).
        max_tokens / max_new_tokens: Reply length limits [tokens].
        temperature: Sampling temperature (0: greedy).
        timeout_s: Endpoint request timeout [s].
        device: torch device of a local model.
        engine / grammar / threads / draft_tokens: Local engine options (docs/engines.md).
        max_retries / stream: Endpoint retries and streaming (openai).
    """

    spec: str = "scripted"
    base_url: str | None = None
    model: str | None = None
    model_folder: str | None = None
    max_tokens: int | None = None
    max_new_tokens: int | None = None
    temperature: float | None = None
    timeout_s: float | None = None
    device: str | None = None
    engine: str | None = None
    grammar: str | None = None
    threads: int | None = None
    draft_tokens: int | None = None
    max_retries: int | None = None
    stream: bool | None = None

    def __post_init__(self) -> None:
        s = "policy"
        check_types(self, s)
        if not self.spec:
            raise InvalidArgumentError("policy.spec must name a policy, got ''")
        for name in ("max_tokens", "max_new_tokens", "threads"):
            check_limit(s, name, getattr(self, name), 1, strict=False)
        for name in ("draft_tokens", "max_retries", "temperature"):
            check_limit(s, name, getattr(self, name), 0, strict=False)
        check_limit(s, "timeout_s", self.timeout_s, 0, strict=True)
        check_choice(s, "engine", self.engine, ENGINES)
        check_choice(s, "grammar", self.grammar, GRAMMARS)

    def given(self, *names: str) -> dict[str, Any]:
        """The named options that are set (not ``None``), as keyword arguments."""
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}
