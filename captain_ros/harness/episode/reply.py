"""Asking the policy for one reply and parsing it into code cells; neither ever raises.

A policy that raises or returns something else than a
:class:`~captain_ros.policy.base.PolicyReply` ends the episode (``policy_error``); a reply that
cannot be parsed becomes an observation (a malformed request).
"""

from __future__ import annotations

import logging
from typing import Any

from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA
from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.policy.toolcalls import ParsedReply, parse_reply

log = logging.getLogger(__name__)


def ask(policy: Policy, messages: list[dict[str, Any]]) -> tuple[PolicyReply, bool]:
    """The policy's reply and whether the policy failed (a failing model ends the episode)."""
    try:
        reply = policy.act(messages, [PYTHON_TOOL_SCHEMA])
    except Exception as exc:  # noqa: BLE001
        log.exception("policy failed")
        return PolicyReply(
            content="", reasoning=f"(policy error: {type(exc).__name__}: {exc})"
        ), True
    if not isinstance(reply, PolicyReply):
        log.error("policy returned %s instead of a PolicyReply", type(reply).__name__)
        return PolicyReply(content="", reasoning=f"(policy returned {type(reply).__name__})"), True
    return reply, False


def parse(reply: PolicyReply) -> ParsedReply:
    try:
        return parse_reply(reply.content, list(reply.tool_calls) or None, reply.reasoning)
    except Exception as exc:  # noqa: BLE001 - unparseable output is an observation
        log.exception("reply parsing failed")
        return ParsedReply(
            str(reply.reasoning or ""), (), (f"the reply could not be parsed ({exc})",)
        )
