"""The Policy interface: rendered chat messages + tool schema in, one reply out.

A reply carries the reasoning text, the raw content (which may itself hold tool-call markup that
:func:`captain_ros.policy.toolcalls.parse_reply` understands) and zero or more structured
``python`` tool calls in OpenAI shape (``{"id", "type": "function", "function": {"name",
"arguments"}}``), plus token and time accounting. One :meth:`Policy.act` call is one *request*.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PolicyReply:
    """One model reply.

    Attributes:
        content: The text channel (prose, possibly tool-call markup or fenced code).
        reasoning: The thinking channel, if separate.
        tool_calls: Structured tool calls (OpenAI shape); may be empty.
        prompt_tokens: Tokens of the rendered context [tokens].
        completion_tokens: Tokens generated [tokens].
        model_s: Time the policy spent producing the reply, as measured by the policy [s].
        info: Policy-side facts about this reply for the episode record, never shown to the
            policy (e.g. ``{"faults": [...]}`` from the fault-injecting scripted expert).
        completion_ids: Token ids of the sampled reply, when the policy knows them (in-process
            models); empty otherwise.
        logprobs: log pi(token | context) of each of ``completion_ids`` at temperature 1 [nats]
            (for RL ratios); empty when unknown.
    """

    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_s: float = 0.0
    info: Mapping[str, Any] = field(default_factory=dict)
    completion_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "reasoning": self.reasoning,
            "tool_calls": list(self.tool_calls),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model_s": self.model_s,
            "info": dict(self.info),
            "completion_ids": list(self.completion_ids),
            "logprobs": list(self.logprobs),
        }


def python_call(code: str, call_id: str) -> dict[str, Any]:
    """A structured ``python`` tool call carrying ``code``."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "python", "arguments": json.dumps({"code": code})},
    }


class Policy(abc.ABC):
    """Produces one reply per request."""

    name: str = "policy"

    def reset(self, task_name: str, seed: int) -> None:  # noqa: B027 - optional hook
        """Called once before an episode."""

    @abc.abstractmethod
    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        """Reply to the rendered history ``messages`` given the tool schema ``tools``."""

    def describe(self) -> dict[str, Any]:
        """What runs this policy, for the episode's summary (a model policy names its engine)."""
        return {"engine": "none"}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release model resources."""
