"""Glue between the action server and the harness (no rclpy here).

:class:`CancellablePolicy` wraps any Policy: it counts requests (for receipts and progress) and,
once cancel is requested, answers with a reply that has no tool call, which ends the harness's
episode loop at the next request boundary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from captain_ros.policy.base import Policy, PolicyReply


class CancellablePolicy(Policy):
    """Delegates to ``inner`` until ``cancelled()`` returns True."""

    def __init__(self, inner: Policy, cancelled: Callable[[], bool]) -> None:
        self.inner = inner
        self.cancelled = cancelled
        self.requests = 0
        self.name = getattr(inner, "name", "policy")

    def reset(self, task_name: str, seed: int) -> None:
        self.requests = 0
        self.inner.reset(task_name, seed)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        if self.cancelled():
            return PolicyReply(content="", reasoning="(episode canceled by the operator)")
        self.requests += 1
        return self.inner.act(messages, tools)

    def close(self) -> None:
        self.inner.close()
