"""Glue between the action server and the harness (no rclpy here).

:class:`CancellablePolicy` wraps any Policy: it counts requests (for receipts and progress) and,
once cancel is requested, answers with a reply that has no tool call, which ends the harness's
episode loop at the next request boundary.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from captain_ros.core.result import Result
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


def finish_results(trajectory_path: Path) -> list[tuple[str, dict[str, Any], Result]]:
    """``(name, kwargs, result)`` of every ``finish()`` call recorded in ``trajectory.jsonl``.

    ``finish`` is answered by the harness's completion gate, not by a robot node, so the policy
    node reads these back to publish their receipts too.
    """
    if not trajectory_path.exists():
        return []
    out = []
    for line in trajectory_path.read_text().splitlines():
        rec = json.loads(line)
        for cell in rec.get("calls", []) if rec.get("type") == "request" else []:
            for call in cell.get("robot_calls", []):
                if call.get("name") == "finish":
                    out.append(("finish", dict(call.get("kwargs") or {}), Result.from_dict(call["result"])))
    return out
