"""Prompt profiles: what the policy is told and how much history it keeps, as one named choice.

``default`` is the paper's harness text: the full system prompt and the full API reference of
TASK.md (every parameter documented), long tool outputs, compaction only near a large model's
window. ``compact`` says the same with fewer tokens for a small student (SmolLM2-135M has 8,192
positions): a short system prompt, one line per capability (signature and first sentence), the
failure categories by name, shorter tool outputs and compaction well inside the window.
``helpers`` is ``compact`` with the expert's session functions already defined in the session
(:mod:`captain_ros.policy.expert.library`, CaPtain's helper-library rewrite): a student writes
calls such as ``note(**descend(S, 'red_cube'))`` instead of the helpers' source. Same
capabilities, same receipts. ``student`` is ``helpers`` without the documentation: a trained
student learned the API and the helpers from its data, so TASK.md keeps the instruction, the
success standard, the budgets and the helpers' names, and drops the API reference and the
helpers' descriptions, and its tool outputs leave the receipt lines out (the helpers' ``NOTE``
results stay; the record keeps every receipt); context is counted in SmolLM2's own tokens (all three small profiles do). CaPtain's format alignment applies: collection, training and
deployment must use the same profile; the profile's name is recorded in every episode's
``episode_start`` and in every dataset row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.harness.episode.context import ContextConfig
from captain_ros.harness.episode.taskmd import SYSTEM_PROMPT

REPLY_RESERVE_TOKENS = 1024
"""Positions a small profile keeps free below the model's window for the reply (the students run
with 160-300 new tokens). What the chat template adds around the messages (role markers, tool-call
markup, the tool note) is counted in the prompt itself (``framing="chatml-tools"``)."""

COMPACT_SYSTEM = (
    "You control a robot by writing Python for the `python` tool (persistent session; `robot`, np, "
    "math ready; API in TASK.md). Robot calls never raise: check r.success. Verify with fresh "
    "measurements, then call finish()."
)

HELPERS_SYSTEM = COMPACT_SYSTEM + (
    " The helpers listed in TASK.md are defined already: call them, do not redefine them."
)

STUDENT_SYSTEM = (
    "You control a robot by writing Python for the `python` tool; `robot` and the "
    "helpers are defined. Verify, then call finish()."
)


@dataclass(frozen=True)
class PromptProfile:
    """A named prompt profile.

    Attributes:
        name: ``default``, ``compact`` or ``helpers``.
        system_prompt: The system message.
        compact_api: TASK.md lists each capability on one line.
        context: History rendering limits.
        library: The session starts with the helper library defined (and TASK.md lists it when
            ``reference``).
        reference: TASK.md carries the API reference (and the helper index); without it only
            the instruction, the success standard and the budgets.
    """

    name: str
    system_prompt: str
    compact_api: bool
    context: ContextConfig
    library: bool = False
    reference: bool = True


SMALL_CONTEXT = ContextConfig(
    max_tool_output_tokens=720,
    max_images=4,
    context_limit_tokens=8192,
    compact_at_tokens=7000,
    keep_recent_turns=3,
    tokenizer="smollm2",
    reply_reserve_tokens=REPLY_RESERVE_TOKENS,
    framing="chatml-tools",
    compact_block_turns=8,
)
"""History limits for a small student (SmolLM2-135M has 8,192 positions), in its own tokens, each
message counted as SmolLM2's chat template with the tool prelude writes it. A tool
output keeps 720 of them, what its former 400-token estimate allowed (1,600 characters at the
0.45 SmolLM2 tokens per character of the expert's outputs): the expert's longest outputs (1.8-2.1k
characters) are cut as before, the rest not. Compaction removes turns 8 at a time, so past the
threshold llama.cpp prefills one request in nine from the task on instead of nearly every one
(benchmarks/results/student.md: a 54-request restack episode, 74.6k prefill tokens -> 19.0k)."""

STUDENT_CONTEXT = replace(SMALL_CONTEXT, receipts=False)
"""The ``student`` profile's history: :data:`SMALL_CONTEXT` without the receipt lines. The expert
decides every step from what its helpers print (one ``NOTE {json}`` line a request) and never from
a receipt, so a student imitating it needs no more; on the expert's path the receipts are most of
an episode's tokens (measured in benchmarks/results/student-profile.md)."""

PROFILES = {
    "default": PromptProfile("default", SYSTEM_PROMPT, False, ContextConfig()),
    "compact": PromptProfile("compact", COMPACT_SYSTEM, True, SMALL_CONTEXT),
    "helpers": PromptProfile("helpers", HELPERS_SYSTEM, True, SMALL_CONTEXT, library=True),
    "student": PromptProfile(
        "student", STUDENT_SYSTEM, True, STUDENT_CONTEXT, library=True, reference=False
    ),
}


def get_profile(name: str) -> PromptProfile:
    """The profile ``name``; :class:`UnknownNameError` lists the valid ones."""
    if name not in PROFILES:
        raise UnknownNameError("prompt profile", name, list(PROFILES))
    return PROFILES[name]


def library_prelude(profile: PromptProfile) -> str:
    """The Python the session runs at start-up under ``profile`` (empty without a library)."""
    if not profile.library:
        return ""
    from captain_ros.policy.expert.library import library_source

    return library_source()


def library_task_md(profile: PromptProfile) -> str:
    """TASK.md's helper section under ``profile``: empty without a library, the index with one
    line per helper with the reference, else the heading and the helpers' names only."""
    if not profile.library:
        return ""
    from captain_ros.policy.expert.library import LIBRARY_HEADING, entry_points, library_index

    if profile.reference:
        return library_index()
    return LIBRARY_HEADING + "\n\n" + ", ".join(f"`{n}`" for n in entry_points()) + "\n"


def trained_profile(model_folder: str | Path | None) -> str | None:
    """The profile a student folder was trained with (``sft_config.json`` of ``captain learn
    sft``, or ``student.json`` of a shipped student), ``None`` for a folder without one (a base
    model)."""
    if not model_folder:
        return None
    for name in ("sft_config.json", "student.json"):
        meta = Path(model_folder) / name
        try:
            profile = json.loads(meta.read_text()).get("profile") if meta.is_file() else None
        except (OSError, ValueError, AttributeError):
            return None
        if profile:
            return str(profile)
    return None


def resolve_profile(requested: str | None, model_folder: str | Path | None = None) -> str:
    """The profile to run: ``requested`` (``None``/``auto``: the student's, else ``default``);
    refuses a profile other than the one the student in ``model_folder`` was trained with."""
    trained = trained_profile(model_folder)
    if requested in (None, "", "auto"):
        return trained or "default"
    get_profile(requested)
    if trained is not None and trained != requested:
        raise InvalidArgumentError(
            f"the student in {model_folder} was trained with the "
            f"{trained!r} prompt profile; run it with that profile, not "
            f"{requested!r}"
        )
    return requested
