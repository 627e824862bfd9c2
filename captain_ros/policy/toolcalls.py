"""Robust parsing of `python` tool calls from what language models actually emit.

Small models rarely produce clean structured tool calls. This module turns a raw completion (and,
when the server parsed them, its structured ``tool_calls``) into reasoning text plus an ordered
list of code cells, and records what was malformed so the harness can show it to the policy as an
observation instead of crashing. Accepted forms, in order of preference:

1. Structured OpenAI ``tool_calls`` (``{"function": {"name": "python", "arguments": "<json>"}}``);
   ``arguments`` may be a JSON object with ``code``, a JSON string, or bare code.
2. Hermes / Qwen ``<tool_call>{"name": "python", "arguments": {"code": "..."}}</tool_call>``
   blocks, including a final block cut off by the token limit (no closing tag, partial JSON).
3. Qwen3-coder XML ``<function=python><parameter=code>...</parameter></function>``.
4. Fenced code blocks (```` ```python ... ``` ````), used only when no tool-call markup exists.

Reasoning is the text inside ``<think>...</think>`` (or the server's ``reasoning_content``) plus
any prose outside the tool calls.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

TOOL_NAME = "python"

_THINK_RE = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)
_TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_XML_FUNC_RE = re.compile(r"<function=([\w.-]+)>(.*?)(?:</function>|$)", re.DOTALL)
_XML_PARAM_RE = re.compile(r"<parameter=([\w.-]+)>\n?(.*?)\n?(?:</parameter>|$)", re.DOTALL)
_FENCE_RE = re.compile(r"```[ \t]*(python|py|python3)?[ \t]*\n(.*?)(?:```|$)", re.DOTALL | re.I)
_CODE_FIELD_RE = re.compile(r'"(?:code|source|cell|input)"\s*:\s*"((?:[^"\\]|\\.)*)("?)', re.DOTALL)


@dataclass(frozen=True)
class ParsedReply:
    """One model reply split into reasoning and code cells.

    Attributes:
        reasoning: Thinking plus prose outside tool calls (stripped).
        code_cells: The ``python`` tool calls' code, in order.
        errors: One sentence per malformed or rejected call (shown to the policy).
        tool_call_ids: Ids of structured tool calls (generated ``call_<n>`` when absent).
    """

    reasoning: str
    code_cells: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    tool_call_ids: tuple[str, ...] = field(default_factory=tuple)

    @property
    def has_tool_call(self) -> bool:
        """True when the reply asked for at least one tool call (even a malformed one)."""
        return bool(self.code_cells or self.errors)


def parse_reply(
    content: str | None,
    tool_calls: Sequence[dict[str, Any]] | None = None,
    reasoning_content: str | None = None,
) -> ParsedReply:
    """Parse one assistant reply.

    Args:
        content: The raw text of the completion (may contain think tags and tool-call markup).
        tool_calls: Structured OpenAI tool calls, if the server parsed any.
        reasoning_content: A separate reasoning channel (vLLM ``reasoning_content``), if any.
    """
    text = content or ""
    thoughts = (
        [reasoning_content.strip()] if reasoning_content and reasoning_content.strip() else []
    )
    thoughts += [m.strip() for m in _THINK_RE.findall(text) if m.strip()]
    text = _THINK_RE.sub("", text)
    # A reply that opens with reasoning but whose <think> was in the prompt ends with </think>.
    if "</think>" in text:
        head, text = text.rsplit("</think>", 1)
        if head.strip():
            thoughts.append(head.strip())

    cells: list[str] = []
    errors: list[str] = []
    ids: list[str] = []
    if tool_calls:
        for i, call in enumerate(tool_calls):
            fn = call.get("function") or call
            _accept(fn.get("name"), fn.get("arguments"), cells, errors)
            ids.append(str(call.get("id") or f"call_{i}"))
    prose = text
    if not tool_calls:
        blocks = _TOOL_CALL_RE.findall(text)
        if blocks:
            for block in blocks:
                name, args = _decode_call_block(block)
                _accept(name, args, cells, errors)
            prose = _TOOL_CALL_RE.sub("", text)
        elif "<function=" in text:
            for fname, body in _XML_FUNC_RE.findall(text):
                params = dict(_XML_PARAM_RE.findall(body))
                _accept(fname, params if params else body, cells, errors)
            prose = _XML_FUNC_RE.sub("", text)
        else:
            fences = [(lang, body) for lang, body in _FENCE_RE.findall(text)]
            for _lang, body in fences:
                if body.strip():
                    cells.append(body.strip("\n"))
            prose = _FENCE_RE.sub("", text)
        ids = [f"call_{i}" for i in range(len(cells) + len(errors))]
    if prose.strip():
        thoughts.append(prose.strip())
    return ParsedReply("\n\n".join(thoughts), tuple(cells), tuple(errors), tuple(ids))


def _accept(name: Any, arguments: Any, cells: list[str], errors: list[str]) -> None:
    """Validate one call and append its code (or an error sentence)."""
    if name is not None and str(name).strip() != TOOL_NAME:
        errors.append(f"unknown tool {name!r}: the only tool is 'python' with argument 'code'")
        return
    code = _code_from_arguments(arguments)
    if code is None:
        errors.append(
            "tool call arguments could not be parsed: call python with "
            '{"code": "<your python source>"}'
        )
    elif not code.strip():
        errors.append("empty code: the python tool needs non-empty 'code'")
    else:
        cells.append(code)


def _code_from_arguments(arguments: Any) -> str | None:
    """Extract code from arguments given as a dict, a JSON string, or bare code."""
    if arguments is None:
        return None
    if isinstance(arguments, dict):
        for key in ("code", "source", "cell", "input", "script"):
            if isinstance(arguments.get(key), str):
                return arguments[key]
        strings = [v for v in arguments.values() if isinstance(v, str)]
        return strings[0] if len(strings) == 1 else None
    if not isinstance(arguments, str):
        return None
    stripped = arguments.strip()
    if not stripped:
        return ""
    if stripped[0] in '{"':
        value = _loads_lenient(stripped)
        if isinstance(value, (dict, str)):
            return _code_from_arguments(value) if isinstance(value, dict) else value
        match = _CODE_FIELD_RE.search(stripped)
        if match:
            return _unescape_json_string(match.group(1))
        if stripped[0] == "{":
            return None
    return _strip_fence(arguments)


def _decode_call_block(block: str) -> tuple[Any, Any]:
    """Name and arguments of one ``<tool_call>`` body (JSON, partial JSON or bare code)."""
    body = _strip_fence(block.strip())
    value = _loads_lenient(body)
    if isinstance(value, dict):
        name = value.get("name", TOOL_NAME)
        args = value.get("arguments", value.get("parameters"))
        if args is None and any(k in value for k in ("code", "source")):
            args = value
        return name, args
    if body.startswith("{"):
        name_m = re.search(r'"name"\s*:\s*"([^"]*)"', body)
        code_m = _CODE_FIELD_RE.search(body)
        if code_m:
            return (name_m.group(1) if name_m else TOOL_NAME), {
                "code": _unescape_json_string(code_m.group(1))
            }
        return (name_m.group(1) if name_m else TOOL_NAME), None
    return TOOL_NAME, body


def _loads_lenient(text: str) -> Any:
    """``json.loads`` that also accepts truncated JSON, Python literals and trailing junk."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        value, _end = json.JSONDecoder().raw_decode(text)
        return value
    except ValueError:
        pass
    repaired = _close_json(text)
    if repaired is not None:
        try:
            return json.loads(repaired)
        except ValueError:
            pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _close_json(text: str) -> str | None:
    """Close an unterminated string and open brackets of truncated JSON (None if hopeless)."""
    stack: list[str] = []
    in_str = escaped = False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and (not stack or stack.pop() != ch):
            return None
    out = text
    if in_str:
        out = (out[:-1] if escaped else out) + '"'  # drop a dangling escape, close the string
    return out + "".join(reversed(stack))


def _unescape_json_string(raw: str) -> str:
    try:
        return json.loads(f'"{raw}"')
    except ValueError:
        return raw.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")


def _strip_fence(text: str) -> str:
    match = _FENCE_RE.search(text)
    return match.group(2).strip("\n") if match and text.lstrip().startswith("```") else text
