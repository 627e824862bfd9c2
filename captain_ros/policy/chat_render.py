"""The one function that turns chat messages into the text a local model reads.

Deployment (:class:`~captain_ros.policy.transformers_chat.TransformersChat`) and SFT
(:mod:`captain_ros.learn.tokenize`) both call :func:`render_chat`, so a student is trained on
exactly the text it later sees. The rules:

1. Message content is flattened to text by :func:`flatten_content` (images become a placeholder
   for text-only models). Tool calls keep their OpenAI shape; string ``arguments`` stay verbatim.
2. The model's own chat template renders the messages and the tool schema, when the template
   supports tools (it shows the tool schema, the assistant's tool calls and the tool outputs;
   :func:`template_supports_tools` checks this by rendering a probe).
3. Otherwise (e.g. SmolLM2's plain ChatML template) the template is wrapped by
   :func:`with_tool_prelude`: a Jinja prelude (``tool_prelude.jinja``) rewrites tool calls into
   Hermes ``<tool_call>`` markup, tool outputs into ``<tool_response>`` user turns and adds
   :data:`TOOL_NOTE` to the system message. Because this is a template, not Python, a student
   saved with the wrapped template renders identically in ``transformers serve`` and vLLM.

Nothing here imports torch; a tokenizer is anything with ``apply_chat_template`` and
``chat_template``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TOOL_NOTE = (
    "You have one tool, `python`, which runs code in a persistent Python session with "
    '`robot` pre-imported. Call it by writing <tool_call>{"name": "python", '
    '"arguments": {"code": "..."}}</tool_call> or a ```python fenced block. '
    "Reply without a tool call only when the episode is over."
)

PRELUDE_PATH = Path(__file__).with_name("tool_prelude.jinja")
_PRELUDE_MARK = "{#- Tool-call prelude for chat templates without tool support"
_PROBE_CODE = "captain_probe_code()"
_PROBE_OUTPUT = "captain_probe_output"
_PROBE_TOOL = "captain_probe_tool"


def flatten_content(content: Any) -> str:
    """Text of an OpenAI message ``content`` (string or list of parts); images -> placeholders."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") in ("image_url", "image"):
            parts.append("[image attached; this model cannot see images]")
        else:
            parts.append(str(part))
    return "\n".join(parts)


def chat_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as a chat template expects them: text content, tool calls and ids kept."""
    out = []
    for m in messages:
        msg: dict[str, Any] = {"role": m["role"], "content": flatten_content(m.get("content"))}
        if m.get("tool_calls"):
            msg["tool_calls"] = [dict(tc) for tc in m["tool_calls"]]
        if m.get("tool_call_id"):
            msg["tool_call_id"] = m["tool_call_id"]
        out.append(msg)
    return out


@functools.cache
def _prelude() -> str:
    return PRELUDE_PATH.read_text(encoding="utf-8")


def with_tool_prelude(template: str) -> str:
    """``template`` preceded by the tool prelude (idempotent)."""
    return template if template.startswith(_PRELUDE_MARK) else _prelude() + template


@functools.lru_cache(maxsize=32)
def _supports_tools(template: str) -> bool:
    from transformers.utils import chat_template_utils

    render_jinja_template: Any = chat_template_utils.render_jinja_template
    tool = {
        "type": "function",
        "function": {
            "name": _PROBE_TOOL,
            "description": "probe",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    call = {
        "id": "c0",
        "type": "function",
        "function": {"name": _PROBE_TOOL, "arguments": json.dumps({"code": _PROBE_CODE})},
    }
    probe = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": _PROBE_OUTPUT},
    ]
    try:
        rendered, _ = render_jinja_template(
            [probe], tools=[tool], chat_template=template, add_generation_prompt=True
        )
    except Exception:  # noqa: BLE001 - a template that cannot render tools does not support them
        return False
    text = rendered[0]
    return _PROBE_TOOL in text and _PROBE_CODE in text and _PROBE_OUTPUT in text


def render_template(
    template: str,
    conversation: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
    **special_tokens: str,
) -> str:
    """``template`` rendered as a tokenizer's ``apply_chat_template`` renders it (transformers'
    Jinja environment), for a model that has a chat template but no transformers tokenizer (the
    llama.cpp engine reads the template from a GGUF file)."""
    from transformers.utils import chat_template_utils

    render_jinja_template: Any = chat_template_utils.render_jinja_template
    rendered, _ = render_jinja_template(
        [list(conversation)],
        tools=list(tools) if tools else None,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        **special_tokens,
    )
    return str(rendered[0])


def template_supports_tools(template: str | None) -> bool:
    """True when ``template`` shows the tool schema, the assistant's tool calls and tool outputs."""
    return bool(template) and _supports_tools(str(template))


def effective_template(tokenizer: Any) -> str:
    """The chat template :func:`render_chat` applies for ``tokenizer`` (wrapped when needed)."""
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        raise ValueError("the tokenizer has no chat template")
    if isinstance(template, dict):  # several named templates: the default one
        template = template.get("default") or next(iter(template.values()))
    template = str(template)
    return template if template_supports_tools(template) else with_tool_prelude(template)


def render_chat(
    tokenizer: Any,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    """The prompt text for ``messages`` (and the tool schema ``tools``) under ``tokenizer``.

    With ``add_generation_prompt`` the text ends where the model's reply begins; without it, a
    final assistant message is rendered as a finished turn (what SFT supervises).
    """
    return str(
        tokenizer.apply_chat_template(
            chat_messages(messages),
            tools=list(tools) if tools else None,
            chat_template=effective_template(tokenizer),
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
        )
    )
