"""Model-backed policies: an OpenAI-compatible server (vLLM, ``transformers serve``) or an
in-process transformers model. Both return the raw reply; the harness parses tool calls with
:func:`captain_ros.policy.toolcalls.parse_reply`, so markup a small model emits in its text
(Hermes ``<tool_call>``, fenced code) is handled the same way for both.
"""

from __future__ import annotations

from typing import Any

from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.policy.openai_client import ChatCompletion, OpenAIChatClient


def _reply(out: ChatCompletion) -> PolicyReply:
    return PolicyReply(
        content=out.content,
        reasoning=out.reasoning,
        tool_calls=out.tool_calls,
        prompt_tokens=out.usage.prompt_tokens,
        completion_tokens=out.usage.completion_tokens,
        model_s=out.latency_s,
        completion_ids=out.completion_ids,
        logprobs=out.logprobs,
    )


class OpenAIPolicy(Policy):
    """A policy served behind an OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: e.g. ``http://localhost:8000/v1`` (vLLM) .
        model: Served model name.
        **client_kw: Passed to :class:`~captain_ros.policy.openai_client.OpenAIChatClient`.
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, **client_kw: Any) -> None:
        self.client = OpenAIChatClient(base_url, model, **client_kw)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        return _reply(self.client.complete(messages, tools or None))

    def close(self) -> None:
        self.client.close()


class TransformersPolicy(Policy):
    """A local model run in-process by an inference engine (:mod:`captain_ros.policy.engines`).

    The engine keeps the episode's prefix across requests and forgets it at :meth:`reset`.
    Replies carry their token ids and log-probabilities, and ``info`` records the engine, the
    grammar and how much of the prompt was reused.

    Args:
        folder: ``"smollm2"`` (the packaged SmolLM2-135M-Instruct), a model folder or a GGUF file.
        engine: ``auto`` | ``llamacpp`` | ``transformers``.
        grammar: ``none`` | ``envelope`` (llamacpp only).
        threads: CPU threads of the engine (default ``$OMP_NUM_THREADS``, else all cores).
        device: ``cuda`` / ``cpu`` / None (transformers engine).
        **kw: :class:`~captain_ros.policy.engines.base.EngineSettings` fields (``max_new_tokens``,
            ``temperature``, ``top_p``, ``seed``).
    """

    name = "transformers"

    def __init__(
        self,
        folder: str = "smollm2",
        engine: str = "auto",
        grammar: str = "none",
        threads: int | None = None,
        device: str | None = None,
        draft_tokens: int | None = None,
        **kw: Any,
    ) -> None:
        from captain_ros.policy.engines import EngineSettings, make_engine

        self.engine = make_engine(
            engine,
            folder,
            EngineSettings(threads=threads, **kw),
            grammar=grammar,
            device=device,
            draft_tokens=draft_tokens,
        )
        # What samples (``seed`` / ``requests`` / ``render``; RE-0 seats reseed it): the
        # transformers engine's TransformersChat, or the llama.cpp engine itself.
        self.chat: Any = getattr(self.engine, "chat", self.engine)
        self.base_seed: int | None = getattr(self.chat, "seed", None)

    def describe(self) -> dict[str, Any]:
        out = dict(self.engine.describe())
        if self.base_seed is not None:  # request k of this episode sampled with it + k
            out["sampling_seed"] = int(self.chat.seed)
        return out

    def reset(self, task_name: str, seed: int) -> None:
        """A new episode: the engine forgets its prefix, and sampling restarts from the episode's
        own seed (:func:`~captain_ros.policy.engines.base.episode_seed`): without it every episode
        of a process drew the same random numbers request by request (or went on from whatever
        ran before it), so sampled episodes were neither independent nor reproducible alone."""
        from captain_ros.policy.engines.base import episode_seed

        self.engine.reset()
        if self.base_seed is not None:
            self.chat.seed = episode_seed(self.base_seed, task_name, seed)
            self.chat.requests = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        gen = self.engine.generate(messages, tools or None)
        info = {
            "engine": self.engine.name,
            "reused_tokens": gen.cache.reused,
            "prefilled_tokens": gen.cache.prefilled,
            "finish_reason": gen.finish_reason,
        }
        grammar = getattr(self.engine, "grammar_name", "none")
        if grammar != "none":
            info["grammar"] = grammar
            info["grammar_forced_tokens"] = int(getattr(self.engine, "last_forced", 0))
        drafted = getattr(self.engine, "last_drafted", None)
        if drafted is not None:  # llamacpp's prompt lookup: drafted and kept tokens
            info["drafted_tokens"], info["accepted_tokens"] = drafted
        info["decode_s"] = round(float(getattr(self.engine, "last_decode_s", 0.0)), 4)
        return PolicyReply(
            content=gen.text,
            prompt_tokens=len(gen.prompt_ids),
            completion_tokens=len(gen.completion_ids),
            model_s=gen.model_s,
            completion_ids=gen.completion_ids,
            logprobs=gen.logprobs,
            info=info,
        )

    def close(self) -> None:
        self.engine.close()
