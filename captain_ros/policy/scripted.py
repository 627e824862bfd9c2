"""The scripted expert behind the :class:`~captain_ros.policy.base.Policy` interface.

Each request it reads the tool outputs that follow its last reply in the rendered history (the
same messages a model would see: cell output and receipts), hands that text to the expert, and
replies with the expert's reasoning and one ``python`` call. When the plan is over it replies
without a tool call, which ends the episode.
"""

from __future__ import annotations

import re
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


def instruction_from(messages: list[dict[str, Any]]) -> str:
    """The instruction sentence of TASK.md: the paragraph under its ``## Instruction`` heading
    (or, in the older layout, under ``## Task: <name>``)."""
    texts = []
    for m in messages:
        if m.get("role") == "assistant":
            break
        texts.append(flatten_content(m.get("content")))
    text = "\n".join(texts)
    for heading in (r"#+ *Instruction\b[^\n]*", r"#+ *Task\b[^\n]*"):
        for match in re.finditer(r"^" + heading + r"\n+((?:(?!#).+\n?)+)", text,
                                 re.MULTILINE | re.IGNORECASE):
            para = match.group(1).strip()
            if para:
                return para.split("\n\n")[0].strip()
    return ""


class ScriptedPolicy(Policy):
    """The per-task scripted expert (the embedded default policy; no model, no download)."""

    name = "scripted"

    def __init__(self) -> None:
        self.expert: ScriptedExpert | None = None
        self.task: str | None = None

    def reset(self, task_name: str, seed: int) -> None:
        self.task = task_name
        self.expert = None  # built at the first request, once TASK.md (the instruction) is read

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        start = time.perf_counter()
        if self.task is None:
            raise RuntimeError("ScriptedPolicy.reset(task, seed) must be called before act()")
        if self.expert is None:
            self.expert = ScriptedExpert(self.task, instruction_from(messages))
        cell = self.expert.next_cell(outputs_since_last_reply(messages))
        if cell is None:
            return PolicyReply(content="The episode is over.", reasoning="Nothing left to do.",
                               model_s=time.perf_counter() - start)
        return PolicyReply(content="", reasoning=cell.reasoning,
                           tool_calls=(python_call(cell.code, f"call_{self.expert.cells}"),),
                           model_s=time.perf_counter() - start)
