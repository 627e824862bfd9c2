"""How rendered messages are counted: each message as the model's chat template frames it.

A context limit holds only if the whole prompt is counted, not just the messages' text. The chat
template adds role markers to every message, wraps each tool call in Hermes ``<tool_call>``
markup and each tool output in ``<tool_response>``, appends the tool note to the system message
and opens the reply. On an off-plan student episode of 55 short turns these added ~1,190 SmolLM2
tokens that the old per-message estimate (4 tokens a message, 8 a tool call) missed: its prompt
reached 8,223 tokens of SmolLM2's 8,192 while the estimate said 6,975 (session 27, insertion dev
903).

Framings, by name (:attr:`ContextConfig.framing
<captain_ros.harness.episode.context.ContextConfig>`):

- ``estimate``: the message text, 4 tokens per message, the tool-call arguments and 8 per call,
  ``image_tokens`` per image. Records from before the field counted this way.
- ``chatml-tools``: the exact text of ChatML with captain's tool prelude
  (:mod:`captain_ros.policy.chat_render`, ``tool_prelude.jinja``: SmolLM2's template as every
  small profile runs it, with the ``python`` tool offered), images as the text-only placeholder.
  Every message starts with the special ``<|im_start|>`` token, so the messages' counts add up to
  the prompt's exactly; tests/test_context_tokens.py pins the text to the real template.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from captain_ros.core.errors import UnknownNameError
from captain_ros.policy.chat_render import TOOL_NOTE, flatten_content

FRAMINGS = ("estimate", "chatml-tools")

_GENERATION_PROMPT = "<|im_start|>assistant\n"


def check_framing(name: str) -> str:
    """``name`` if it is one of :data:`FRAMINGS`, else :class:`UnknownNameError`."""
    if name not in FRAMINGS:
        raise UnknownNameError("context framing", name, list(FRAMINGS))
    return name


def _estimate(m: dict[str, Any], image_tokens: int, count: Callable[[str], int]) -> int:
    content = m.get("content")
    if isinstance(content, str):
        total = count(content) + 4
    else:
        total = 4
        for p in content or []:
            total += image_tokens if p.get("type") == "image" else count(p.get("text", ""))
    for tc in m.get("tool_calls", []):
        total += count(tc["function"]["arguments"]) + 8
    return total


def _chatml(m: dict[str, Any], first: bool) -> str:
    """The text ChatML with the tool prelude writes for message ``m``."""
    role, text = m["role"], flatten_content(m.get("content"))
    if role == "assistant":
        for tc in m.get("tool_calls", []):
            f = tc["function"]
            call = f'<tool_call>\n{{"name": "{f["name"]}", "arguments": {f["arguments"]}}}\n</tool_call>'
            text = f"{text}\n{call}" if text else call
    elif role == "tool":
        role, text = "user", f"<tool_response>\n{text}\n</tool_response>"
    elif role == "system" and first:
        text = f"{text}\n\n{TOOL_NOTE}"
    return f"<|im_start|>{role}\n{text}<|im_end|>\n"


def prompt_tokens(
    messages: list[dict[str, Any]], framing: str, image_tokens: int, count: Callable[[str], int]
) -> int:
    """Tokens of ``messages`` as a prompt under ``framing`` [tokens]."""
    if check_framing(framing) == "estimate":
        return sum(_estimate(m, image_tokens, count) for m in messages)
    total = count(_GENERATION_PROMPT)
    if not messages or messages[0]["role"] != "system":
        total += count(f"<|im_start|>system\n{TOOL_NOTE}<|im_end|>\n")
    return total + sum(count(_chatml(m, i == 0)) for i, m in enumerate(messages))
