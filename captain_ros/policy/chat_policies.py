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
    return PolicyReply(content=out.content, reasoning=out.reasoning, tool_calls=out.tool_calls,
                       prompt_tokens=out.usage.prompt_tokens,
                       completion_tokens=out.usage.completion_tokens, model_s=out.latency_s,
                       completion_ids=out.completion_ids, logprobs=out.logprobs)


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
    """A local model folder run in-process (GPU when present).

    The model's KV cache is kept across the requests of an episode and dropped at :meth:`reset`.
    Replies carry their token ids and log-probabilities.

    Args:
        folder: Model folder; ``"smollm2"`` means the packaged SmolLM2-135M-Instruct.
        **kw: Passed to :class:`~captain_ros.policy.transformers_chat.TransformersChat`.
    """

    name = "transformers"

    def __init__(self, folder: str = "smollm2", **kw: Any) -> None:
        from captain_ros.policy.transformers_chat import TransformersChat, smollm2_folder

        if folder == "smollm2":
            path, gguf = smollm2_folder()
            kw.setdefault("gguf_file", gguf)
            folder = str(path)
        self.chat = TransformersChat(folder, **kw)

    def reset(self, task_name: str, seed: int) -> None:
        self.chat.reset()

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        gen = self.chat.generate(messages, tools or None)
        return PolicyReply(content=gen.text, prompt_tokens=len(gen.prompt_ids),
                           completion_tokens=len(gen.completion_ids), model_s=gen.model_s,
                           completion_ids=gen.completion_ids, logprobs=gen.logprobs)
