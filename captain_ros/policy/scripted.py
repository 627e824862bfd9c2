"""The scripted expert behind the :class:`~captain_ros.policy.base.Policy` interface.

Each request it reads the tool outputs that follow its last reply in the rendered history (the
same messages a model would see: cell output and receipts), hands that text to the expert, and
replies with the expert's reasoning and one ``python`` call. When the plan is over it replies
without a tool call, which ends the episode. :class:`FaultyScriptedPolicy` is the same expert
making seeded mistakes (``--policy scripted-faulty[:grasp_offset=0.3,...,seed=N]``);
:class:`TakeoverPolicy` lets the expert take over another policy's episode for a bounded segment.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.base import Policy, PolicyReply, python_call
from captain_ros.policy.expert import ScriptedExpert
from captain_ros.policy.expert.cells import Plan
from captain_ros.policy.expert.expert import Segment
from captain_ros.policy.expert.faults import FaultEvent, FaultInjector, FaultSpec
from captain_ros.policy.expert.library import LIBRARY_HEADING
from captain_ros.policy.transformers_chat import flatten_content


def outputs_since_last_reply(messages: list[dict[str, Any]]) -> str | None:
    """Text of the messages after the last assistant message (None before the first reply)."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    if last is None:
        return None
    return "\n".join(flatten_content(m.get("content")) for m in messages[last + 1 :])


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
        for match in re.finditer(
            r"^" + heading + r"\n+((?:(?!#).+\n?)+)", text, re.MULTILINE | re.IGNORECASE
        ):
            para = match.group(1).strip()
            if para:
                return para.split("\n\n")[0].strip()
    return ""


def library_in(messages: list[dict[str, Any]]) -> bool:
    """TASK.md (the messages before the first reply) lists the session's helper library (the
    ``helpers`` prompt profile), so the expert need not send the helpers' source."""
    for m in messages:
        if m.get("role") == "assistant":
            break
        if LIBRARY_HEADING in flatten_content(m.get("content")):
            return True
    return False


class ScriptedPolicy(Policy):
    """The per-task scripted expert (the embedded default policy; no model, no download)."""

    name = "scripted"

    def __init__(self) -> None:
        self.expert: ScriptedExpert | None = None
        self.task: str | None = None
        self.seed = 0
        self.requests = 0

    def reset(self, task_name: str, seed: int) -> None:
        self.task = task_name
        self.seed = int(seed)
        self.requests = 0
        self.expert = None  # built at the first request, once TASK.md (the instruction) is read

    def _make_expert(self, task: str, instruction: str, preloaded: bool = False) -> ScriptedExpert:
        return ScriptedExpert(task, instruction, preloaded=preloaded)

    def _info(self) -> dict[str, Any]:
        """Facts about the reply being made for the episode record (none for the clean expert)."""
        return {}

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        start = time.perf_counter()
        if self.task is None:
            raise RuntimeError("ScriptedPolicy.reset(task, seed) must be called before act()")
        self.requests += 1
        if self.expert is None:
            self.expert = self._make_expert(
                self.task, instruction_from(messages), library_in(messages)
            )
        cell = self.expert.next_cell(outputs_since_last_reply(messages))
        info = self._info()
        if cell is None:
            return PolicyReply(
                content="The episode is over.",
                reasoning="Nothing left to do.",
                model_s=time.perf_counter() - start,
                info=info,
            )
        return PolicyReply(
            content="",
            reasoning=cell.reasoning,
            tool_calls=(python_call(cell.code, f"call_{self.expert.cells}"),),
            model_s=time.perf_counter() - start,
            info=info,
        )


class FaultyScriptedPolicy(ScriptedPolicy):
    """The scripted expert with seeded faults (:mod:`captain_ros.policy.expert.faults`).

    Each reply's ``info["faults"]`` lists the faults that struck in that request (the request
    numbers count this policy's replies in the episode); :attr:`events` holds the episode's."""

    name = "scripted-faulty"

    def __init__(self, spec: FaultSpec | None = None) -> None:
        super().__init__()
        self.spec = spec or FaultSpec()
        self.injector: FaultInjector | None = None
        self._reported = 0

    def reset(self, task_name: str, seed: int) -> None:
        super().reset(task_name, seed)
        self.injector = FaultInjector(self.spec, task_name, seed)
        self._reported = 0

    @property
    def events(self) -> list[FaultEvent]:
        return list(self.injector.events) if self.injector else []

    def _make_expert(self, task: str, instruction: str, preloaded: bool = False) -> ScriptedExpert:
        assert self.injector is not None
        return ScriptedExpert(task, instruction, wrap=self.injector.wrap, preloaded=preloaded)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        if self.injector is not None:
            self.injector.request = self.requests + 1
        return super().act(messages, tools)

    def _info(self) -> dict[str, Any]:
        assert self.injector is not None
        new = self.injector.events[self._reported :]
        self._reported = len(self.injector.events)
        return {"faults": [e.to_dict() for e in new], "fault_spec": self.spec.to_text()}


class TakeoverPolicy(Policy):
    """``base`` runs the episode, except for one segment the scripted expert takes over.

    From request ``at_request`` on, the expert (:meth:`ScriptedExpert.takeover`) writes the
    requests: it defines its own helpers in the session ``base`` used, measures where the task
    stands and continues, within ``max_requests`` requests and the robot capabilities in
    ``allowed_symbols``; then it hands back and ``base`` writes the rest, seeing the whole history.
    Each reply's ``info["segment"]`` says who wrote it. ``base``'s own ``info`` passes through.
    """

    name = "takeover"

    def __init__(
        self,
        base: Policy,
        at_request: int,
        max_requests: int = 20,
        allowed_symbols: frozenset[str] | set[str] | None = None,
        wrap_teacher: Callable[[Plan], Plan] | None = None,
    ) -> None:
        if isinstance(at_request, bool) or not isinstance(at_request, int) or at_request < 1:
            raise InvalidArgumentError(f"at_request must be an integer >= 1, got {at_request!r}")
        self.base = base
        self.at_request = at_request
        self.segment = Segment(
            max_requests, None if allowed_symbols is None else frozenset(allowed_symbols)
        )
        self.wrap_teacher = wrap_teacher
        self.name = f"{base.name}+takeover"
        self.task: str | None = None
        self.requests = 0
        self.expert: ScriptedExpert | None = None
        self.segment_requests: list[int] = []

    def reset(self, task_name: str, seed: int) -> None:
        self.base.reset(task_name, seed)
        self.task = task_name
        self.requests = 0
        self.expert = None
        self.segment_requests = []

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        start = time.perf_counter()
        self.requests += 1
        if self.task is None:
            raise RuntimeError("TakeoverPolicy.reset(task, seed) must be called before act()")
        if self.requests >= self.at_request and (self.expert is None or not self.expert.done):
            first = self.expert is None
            if first:
                self.expert = ScriptedExpert(
                    self.task,
                    instruction_from(messages),
                    wrap=self.wrap_teacher,
                    segment=self.segment,
                )
            assert self.expert is not None
            cell = self.expert.next_cell(None if first else outputs_since_last_reply(messages))
            if cell is not None:
                self.segment_requests.append(self.requests)
                info = {
                    "segment": {
                        "by": "scripted",
                        "request": len(self.segment_requests),
                        "handed_back": self.expert.handed_back and self.expert.done,
                    }
                }
                return PolicyReply(
                    content="",
                    reasoning=cell.reasoning,
                    tool_calls=(python_call(cell.code, f"call_takeover_{self.requests}"),),
                    model_s=time.perf_counter() - start,
                    info=info,
                )
        reply = self.base.act(messages, tools)
        return replace(reply, info={**reply.info, "segment": {"by": self.base.name}})
