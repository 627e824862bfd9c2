"""The scripted expert behind the :class:`~captain_ros.policy.base.Policy` interface.

Each request it reads the tool outputs that follow its last reply in the rendered history (the
same messages a model would see: cell output and receipts), hands that text to the expert, and
replies with the expert's reasoning and one ``python`` call. When the plan is over it replies
without a tool call, which ends the episode.
"""

from __future__ import annotations

import time
from typing import Any

from captain_ros.policy.base import Policy, PolicyReply, python_call
from captain_ros.policy.expert import ScriptedExpert
from captain_ros.policy.transformers_chat import flatten_content


def outputs_since_last_reply(messages: list[dict[str, Any]]) -> str | None:
    """Text of the messages after the last assistant message (None before the first reply)."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    if last is None:
        return None
    return "\n".join(flatten_content(m.get("content")) for m in messages[last + 1:])


class ScriptedPolicy(Policy):
    """The per-task scripted expert (the embedded default policy; no model, no download)."""

    name = "scripted"

    def __init__(self) -> None:
        self.expert: ScriptedExpert | None = None

    def reset(self, task_name: str, seed: int) -> None:
        self.expert = ScriptedExpert(task_name)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        start = time.perf_counter()
        if self.expert is None:
            raise RuntimeError("ScriptedPolicy.reset(task, seed) must be called before act()")
        cell = self.expert.next_cell(outputs_since_last_reply(messages))
        if cell is None:
            return PolicyReply(content="The episode is over.", reasoning="Nothing left to do.",
                               model_s=time.perf_counter() - start)
        return PolicyReply(content="", reasoning=cell.reasoning,
                           tool_calls=(python_call(cell.code, f"call_{self.expert.cells}"),),
                           model_s=time.perf_counter() - start)
