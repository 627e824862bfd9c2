"""The one deterministic context renderer: history -> chat messages.

Used for live requests and for training data alike, so the policy is trained on exactly what it
sees. Three rules, applied in this order:

1. Tool outputs longer than ``max_tool_output_tokens`` are cut (head and tail kept, receipts sit
   at the tail) with a marker saying how much was removed. With ``receipts=False`` (the ``student``
   profile) the ``[receipt]`` lines are left out first and one line counts them: the policy reads
   what its code printed (the helpers' ``NOTE`` results, errors), the episode record keeps every
   receipt.
2. Only the ``max_images`` (12) most recent images stay; older ones become a one-line text note.
3. When the rendered history exceeds ``compact_at_tokens``, whole turns are removed oldest first
   (the task context and the ``keep_recent_turns`` most recent turns stay verbatim, unless even
   they exceed the hard limit ``context_limit_tokens - reply_reserve_tokens``: then older of them
   go too, down to the last turn); with ``compact_block_turns`` above 1 the count removed is
   rounded up to whole blocks (never into the most recent turns), so the prompt keeps its prefix
   for several requests; a notice after the task lists the commands the removed turns ran
   and warns that the scene may have changed. Variables live in the Python session, so they
   survive compaction.

Token counts use the counter named by ``ContextConfig.tokenizer``
(:mod:`captain_ros.harness.episode.tokens`: ``approx`` = ``ceil(chars / 4)``, or a model's own tokenizer
such as ``smollm2``) unless a ``count_tokens`` callable is passed, applied to each message as
``ContextConfig.framing`` frames it (:mod:`captain_ros.harness.episode.framing`: the old per-message
estimate, or the exact text of the model's chat template).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.harness.episode.framing import check_framing, prompt_tokens
from captain_ros.harness.episode.tokens import approx_tokens, token_counter
from captain_ros.harness.record.history import History, ImageRef, Turn

__all__ = [
    "PYTHON_TOOL_SCHEMA",
    "ContextConfig",
    "approx_tokens",
    "context_tokens",
    "render",
    "truncate_output",
    "turn_commands",
    "without_receipts",
]

PYTHON_TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "python",
        "description": (
            "Run Python code in the persistent sandboxed session. Variables persist across "
            "calls; `robot` (the robot API), numpy as np, scipy and math are pre-imported; "
            "`image(handle, camera)` attaches a camera image. Printed output and robot "
            "receipts are returned."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "Python source to run."}},
            "required": ["code"],
        },
    },
}

_ROBOT_CALL_RE = re.compile(r"\brobot\.(\w+)\s*\(")
_FINISH_RE = re.compile(r"(?<![\w.])finish\s*\(")


@dataclass(frozen=True)
class ContextConfig:
    """Context budgets (paper: 12 images, 65,536-token window, compaction beyond 60k).

    Attributes:
        max_tool_output_tokens: Budget of one tool output [tokens].
        max_images: Most recent images kept.
        context_limit_tokens: The model's context window [tokens].
        compact_at_tokens: Compaction starts above this many tokens [tokens].
        keep_recent_turns: Turns that are never compacted away.
        image_tokens: Tokens charged per image under the ``estimate`` framing [tokens].
        tokenizer: Name of the token counter (:data:`captain_ros.harness.episode.tokens.COUNTERS`);
            records from before this field counted ``approx``.
        reply_reserve_tokens: Positions kept free for the reply (and, under the ``estimate``
            framing, the chat template's own tokens): no rendered history exceeds
            ``context_limit_tokens`` minus this [tokens].
        receipts: Tool outputs show the robot's ``[receipt]`` lines; without them one line
            counts the receipts left out (they stay in the trajectory and the bag).
        framing: How a message is counted (:data:`captain_ros.harness.episode.framing.FRAMINGS`):
            ``estimate`` (records from before this field) or ``chatml-tools`` (the prompt as
            SmolLM2's template with the tool prelude writes it, exactly).
        compact_block_turns: Compaction removes the oldest turns in whole blocks of this many
            (never into the ``keep_recent_turns``), so the same turns are gone for several
            requests and the prompt grows by appending: an engine that keeps the common prefix
            (llama.cpp) prefills only the new turns. 1 (records from before this field): each
            request removes just enough, which rewrites the prompt after the task every time.
    """

    max_tool_output_tokens: int = 2048
    max_images: int = 12
    context_limit_tokens: int = 65536
    compact_at_tokens: int = 60000
    keep_recent_turns: int = 2
    image_tokens: int = 256
    tokenizer: str = "approx"
    reply_reserve_tokens: int = 0
    receipts: bool = True
    framing: str = "estimate"
    compact_block_turns: int = 1

    def __post_init__(self) -> None:
        check_framing(self.framing)
        if self.compact_block_turns < 1:
            raise InvalidArgumentError(
                f"compact_block_turns must be >= 1, got {self.compact_block_turns}"
            )

    @property
    def hard_limit_tokens(self) -> int:
        """The most tokens a rendered history may have [tokens]."""
        return self.context_limit_tokens - self.reply_reserve_tokens

    def counter(self) -> Callable[[str], int]:
        """The token counter this configuration names."""
        return token_counter(self.tokenizer)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


RECEIPT_PREFIX = "[receipt] "
_MORE_RECEIPTS_RE = re.compile(r"^\[\.\.\. (\d+) more receipts not shown\]$")


def without_receipts(text: str) -> str:
    """``text`` without its ``[receipt]`` lines, which one closing line counts (unchanged when it
    has none)."""
    kept: list[str] = []
    n = 0
    for line in text.split("\n"):
        more = _MORE_RECEIPTS_RE.match(line)
        if line.startswith(RECEIPT_PREFIX):
            n += 1
        elif more:
            n += int(more.group(1))
        else:
            kept.append(line)
    if not n:
        return text
    while kept and not kept[-1].strip():
        kept.pop()
    kept.append(f"[{n} receipt{'s' if n != 1 else ''} in the episode record]")
    return "\n".join(kept)


def truncate_output(
    text: str, max_tokens: int, count_tokens: Callable[[str], int] = approx_tokens
) -> str:
    """Cut ``text`` to about ``max_tokens`` keeping the head (2/3) and the tail (1/3)."""
    if count_tokens(text) <= max_tokens:
        return text
    max_chars = max(16, int(len(text) * max_tokens / max(1, count_tokens(text))))
    head, tail = (max_chars * 2) // 3, max_chars // 3
    removed = len(text) - head - tail
    return f"{text[:head]}\n[... {removed} characters truncated to fit the output budget ...]\n{text[-tail:]}"


def turn_commands(turn: Turn) -> str:
    """Short description of what a turn ran (its robot calls, else the first code line)."""
    parts = []
    for call in turn.calls:
        names = _ROBOT_CALL_RE.findall(call.code) + (
            ["finish"] if _FINISH_RE.search(call.code) else []
        )
        if names:
            seen: list[str] = []
            for n in names:
                if n not in seen:
                    seen.append(n)
            parts.append(", ".join(f"robot.{n}" if n != "finish" else "finish" for n in seen))
        else:
            first = next((ln.strip() for ln in call.code.splitlines() if ln.strip()), "")
            parts.append(f"`{first[:80]}`")
    return "; ".join(parts) if parts else "(no code)"


def _image_part(ref: ImageRef, image_root: str | None) -> dict[str, Any]:
    path = f"{image_root.rstrip('/')}/{ref.path}" if image_root else ref.path
    return {"type": "image", "image": path, "camera": ref.camera, "handle": ref.handle}


def _omitted(ref: ImageRef) -> dict[str, Any]:
    return {
        "type": "text",
        "text": f"[image omitted: {ref.camera} of {ref.handle}; only the most recent images are kept]",
    }


def _render_turn(
    turn: Turn,
    cfg: ContextConfig,
    count: Callable[[str], int],
    keep: set[str],
    image_root: str | None,
) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    assistant: dict[str, Any] = {"role": "assistant", "content": turn.reasoning}
    if turn.calls:
        assistant["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": "python", "arguments": json.dumps({"code": c.code})},
            }
            for c in turn.calls
        ]
    msgs.append(assistant)
    for out in turn.outputs:
        msgs.append(
            {
                "role": "tool",
                "tool_call_id": out.call_id,
                "content": truncate_output(
                    out.text if cfg.receipts else without_receipts(out.text),
                    cfg.max_tool_output_tokens,
                    count,
                ),
            }
        )
        if out.images:
            parts: list[dict[str, Any]] = [
                {"type": "text", "text": f"Images attached by {out.call_id}:"}
            ]
            parts += [
                _image_part(r, image_root) if r.path in keep else _omitted(r) for r in out.images
            ]
            msgs.append({"role": "user", "content": parts})
    if turn.notice:
        msgs.append({"role": "user", "content": f"[harness] {turn.notice}"})
    return msgs


def _compaction_notice(removed: tuple[Turn, ...]) -> str:
    lines = [
        f"[Context compacted: requests {removed[0].index}-{removed[-1].index} were removed to fit "
        "the context window. They ran:"
    ]
    lines += [f"- request {t.index}: {turn_commands(t)}" for t in removed]
    lines.append(
        "The scene may have changed since then. Your Python variables are still defined; "
        "re-observe before relying on old detections or poses.]"
    )
    return "\n".join(lines)


def render(
    history: History,
    config: ContextConfig | None = None,
    count_tokens: Callable[[str], int] | None = None,
    image_root: str | None = None,
) -> list[dict[str, Any]]:
    """Chat messages for ``history`` (deterministic: same history and config -> same messages).

    ``count_tokens`` overrides the configuration's counter (``config.tokenizer``)."""
    cfg = config or ContextConfig()
    count_tokens = count_tokens or cfg.counter()
    turns = history.turns
    n_removed = 0
    while True:
        msgs, tokens = _messages(history, cfg, count_tokens, image_root, n_removed)
        left = len(turns) - n_removed
        if (
            tokens <= cfg.compact_at_tokens
            or left <= min(1, cfg.keep_recent_turns)
            or (left <= cfg.keep_recent_turns and tokens <= cfg.hard_limit_tokens)
        ):
            break
        n_removed += 1
    block = cfg.compact_block_turns
    if n_removed and block > 1:  # whole blocks: the same turns go for several requests
        rounded = min(
            -(-n_removed // block) * block, max(n_removed, len(turns) - cfg.keep_recent_turns)
        )
        if rounded > n_removed:
            msgs, _ = _messages(history, cfg, count_tokens, image_root, rounded)
    return msgs


def _messages(
    history: History,
    cfg: ContextConfig,
    count_tokens: Callable[[str], int],
    image_root: str | None,
    n_removed: int,
) -> tuple[list[dict[str, Any]], int]:
    """The messages of ``history`` with its ``n_removed`` oldest turns compacted away, and their
    token count."""
    turns = history.turns
    kept = turns[n_removed:]
    refs = list(history.initial_images) + [r for t in kept for o in t.outputs for r in o.images]
    keep = {r.path for r in refs[-cfg.max_images :]} if cfg.max_images > 0 else set()
    task_parts: list[dict[str, Any]] = [{"type": "text", "text": history.task_md}]
    if history.initial_images:
        seen = ", ".join(f"{r.camera} ({r.handle})" for r in history.initial_images)
        task_parts.append({"type": "text", "text": f"Initial images: {seen}."})
    task_parts += [
        _image_part(r, image_root) if r.path in keep else _omitted(r)
        for r in history.initial_images
    ]
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": history.system},
        {"role": "user", "content": task_parts},
    ]
    if n_removed:
        msgs.append({"role": "user", "content": _compaction_notice(turns[:n_removed])})
    for t in kept:
        msgs += _render_turn(t, cfg, count_tokens, keep, image_root)
    return msgs, prompt_tokens(msgs, cfg.framing, cfg.image_tokens, count_tokens)


def context_tokens(
    messages: list[dict[str, Any]],
    config: ContextConfig | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> int:
    """Token count of rendered messages under the same counting rules."""
    cfg = config or ContextConfig()
    return prompt_tokens(messages, cfg.framing, cfg.image_tokens, count_tokens or cfg.counter())
