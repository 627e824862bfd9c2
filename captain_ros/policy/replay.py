"""A policy that replays requests from a JSON-lines file (debugging and regression).

One request per line: ``{"code": "<python>" | ["<cell 1>", "<cell 2>"], "reasoning": "..."}``.
``code`` may be empty or absent to send a reply without a tool call (which ends the episode);
for testing malformed output a line may instead give the raw reply: ``{"content": "...",
"tool_calls": [...]}``. When the lines run out, the policy replies without a tool call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from captain_ros.policy.base import Policy, PolicyReply, python_call


def load_requests(path: str | Path) -> list[dict[str, Any]]:
    """Parse a replay file; raises ValueError naming the bad line."""
    out = []
    for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc})") from exc
        if not isinstance(item, dict):
            raise ValueError(f"{path}:{n}: each line must be a JSON object with 'code'")
        code = item.get("code")
        if code is not None and not isinstance(code, (str, list)):
            raise ValueError(f"{path}:{n}: 'code' must be a string or a list of strings")
        out.append(item)
    return out


class ReplayPolicy(Policy):
    """Replays scripted requests in order.

    Args:
        requests: A path to a JSON-lines file or the already-parsed request dicts.
    """

    name = "replay"

    def __init__(self, requests: str | Path | Iterable[dict[str, Any]]) -> None:
        self.requests = (
            load_requests(requests) if isinstance(requests, (str, Path)) else list(requests)
        )
        self.position = 0
        self.seen_messages: list[int] = []

    def reset(self, task_name: str, seed: int) -> None:
        self.position = 0
        self.seen_messages = []

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        self.seen_messages.append(len(messages))
        if self.position >= len(self.requests):
            return PolicyReply(content="", reasoning="(replay finished)")
        item = self.requests[self.position]
        self.position += 1
        if "content" in item or "tool_calls" in item:
            return PolicyReply(
                content=str(item.get("content") or ""),
                reasoning=item.get("reasoning"),
                tool_calls=tuple(item.get("tool_calls") or ()),
            )
        code = item.get("code")
        cells = [code] if isinstance(code, str) else list(code or [])
        calls = tuple(
            python_call(str(c), f"call_{self.position}_{i}") for i, c in enumerate(cells) if str(c)
        )
        return PolicyReply(content="", reasoning=str(item.get("reasoning") or ""), tool_calls=calls)
