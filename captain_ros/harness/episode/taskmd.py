"""TASK.md: instruction, success standard, frames and the API section (from the registry)."""

from __future__ import annotations

from typing import Any

from captain_ros.api.taskmd import api_section_md, compact_api_section_md
from captain_ros.harness.episode.budgets import Budgets

SYSTEM_PROMPT = (
    "You are a robot manipulation agent. You act only by writing Python for the `python` tool, which "
    "runs in a persistent session with a pre-imported `robot` client (the API in TASK.md), numpy as np, "
    "scipy and math. In each request, think first, then make one or more python tool calls. Robot calls "
    "never raise: check `r.success`, `r.failure_category` and `r.message`. After each call a receipt of "
    "what physically happened is appended to the output. Verify the result with fresh measurements, "
    "then call `finish()`. Reply without a tool call only when the episode is over."
)


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def render_task_md(
    task: Any,
    seed: int,
    budgets: Budgets,
    compact_api: bool = False,
    helpers: str = "",
    reference: bool = True,
) -> str:
    """The TASK.md of one episode (deterministic); ``compact_api``: the one-line-per-capability
    API section of the ``compact`` prompt profile; ``helpers``: a section appended after the API
    (the ``helpers`` profile's library index); ``reference=False``: no API section at all, only
    the budgets (the ``student`` profile)."""
    if hasattr(task, "task_md"):
        head = str(task.task_md(seed))
    else:
        tol = getattr(task, "tolerances", {}) or {}
        lines = [
            f"# TASK: {getattr(task, 'name', 'task')}",
            "",
            "## Instruction",
            "",
            str(task.instruction(seed)),
            "",
            "## Success standard",
            "",
            "The final scene is judged by the task's goal predicate. finish() is checked against "
            "your own measure_object_geometry results with these tolerances:",
            "",
        ]
        lines += [f"- `{k}`: {_fmt(v)}" for k, v in sorted(tol.items())] or ["- (none stated)"]
        lines += [
            "",
            "## Frames",
            "",
            "World frame (REP 103): x forward from the robot base toward the table centre, y left, "
            "z up, metres. Quaternions [w, x, y, z]. Camera optical frames: x right, y down, z forward. "
            "A tool orientation of [0, 1, 0, 0] points the gripper straight down.",
            "",
        ]
        head = "\n".join(lines)
    budget_line = {
        "requests": budgets.max_requests,
        "wall time [s]": budgets.max_wall_s,
        "physical actions": budgets.max_physical_actions,
    }
    if not reference:
        budgets_md = "Budgets: " + ", ".join(f"{k} {v:g}" for k, v in budget_line.items()) + "."
        return head.rstrip() + "\n\n" + budgets_md + ("\n\n" + helpers if helpers else "")
    api = compact_api_section_md if compact_api else api_section_md
    text = head.rstrip() + "\n\n" + api(budget_line)
    return text.rstrip() + "\n\n" + helpers if helpers else text
