"""The in-process episode's own observers: the live progress of ``captain run`` and what ran
the policy (both added by the composition root, :mod:`captain_ros.evaluation.episode`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from captain_ros.harness.episode.observers import CallEvent, EpisodeObserver
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.policy.base import Policy, PolicyReply

Event = Callable[[str, dict[str, Any]], None]


class ProgressObserver(EpisodeObserver):
    """Forwards requests, replies and receipts to ``on_event`` (the terminal display)."""

    def __init__(self, on_event: Event) -> None:
        self.on_event = on_event

    def before_request(self, t: int) -> None:
        self.on_event("request", {"t": t})

    def on_reply(self, t: int, reply: PolicyReply) -> None:
        self.on_event(
            "reply",
            {
                "t": t,
                "reasoning": reply.reasoning or reply.content,
                "tool_calls": len(reply.tool_calls),
                "model_s": reply.model_s,
            },
        )

    def on_call(self, event: CallEvent) -> None:
        res = event.result
        self.on_event(
            "receipt",
            {
                "request_index": event.request,
                "capability": event.name,
                "duration_s": event.duration_s,
                "success": res.success,
                "executed": res.executed,
                "failure_category": res.failure_category.value if res.failure_category else "",
                "message": res.message,
                "receipt": res.receipt,
            },
        )


class RuntimeObserver(EpisodeObserver):
    """Writes what ran the policy (its engine, model file, threads, grammar: ``Policy.describe``)
    into the summary's ``extra`` (``engine`` and ``policy_runtime``)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def amend(self, record: EpisodeRecord) -> EpisodeRecord:
        runtime = dict(self.policy.describe())
        return dataclasses.replace(
            record,
            extra={
                **record.extra,
                "engine": runtime.get("engine", "none"),
                "policy_runtime": runtime,
            },
        )
