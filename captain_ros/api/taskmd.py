"""The API section of TASK.md, rendered from the registry (deterministic text)."""

from __future__ import annotations

from captain_ros.api import registry
from captain_ros.core.result import FailureCategory

_GROUP_TITLES = {
    "perception": "Perception",
    "measurement": "Measurement",
    "motion": "Motion",
    "planning": "Planning (read-only)",
    "state": "State",
    "completion": "Completion",
}


def failure_vocabulary_md() -> str:
    """The closed failure-category vocabulary with what to do for each."""
    lines = []
    for cat in FailureCategory:
        doc = (
            " ".join((cat.__doc__ or "").split()) if cat.__doc__ != FailureCategory.__doc__ else ""
        )
        lines.append(f"- `{cat.value}`" + (f": {doc}" if doc else ""))
    return "\n".join(lines)


def _first_sentence(doc: str) -> str:
    text = " ".join(doc.split())
    cut = text.find(". ")
    return text if cut < 0 else text[: cut + 1]


def compact_api_section_md(budgets: dict[str, float] | None = None) -> str:
    """The same API in few tokens: one line per capability (signature and first sentence), the
    failure categories by name (the ``compact`` prompt profile)."""
    out = [
        "## Robot API",
        "",
        "`robot.<name>(...)` returns a Result (`r.success`, `r.value`, `r.failure_category`, "
        "`r.message`) and never raises. SI units, world frame (x forward, y left, z up), "
        "quaternions [w, x, y, z]. (P): physical action.",
        "",
    ]
    if budgets:
        out += ["Budgets: " + ", ".join(f"{k} {v:g}" for k, v in budgets.items()) + ".", ""]
    for c in registry.CAPABILITIES:
        out.append(f"- `{c.signature()}`{' (P)' if c.physical else ''}: {_first_sentence(c.doc)}")
    out += [
        "- `image(handle, camera='head')`: attach that image to the output.",
        "",
        "Failure categories: " + ", ".join(f"`{c.value}`" for c in FailureCategory) + ".",
        "",
    ]
    return "\n".join(out)


def api_section_md(budgets: dict[str, float] | None = None) -> str:
    """Markdown of the robot API: every capability with signature, doc, parameters and value."""
    out = [
        "## Robot API",
        "",
        "Call these as `robot.<name>(...)` in the `python` tool. Every call returns a Result dict "
        "`{success, executed, failure_category, message, value, diagnostics, budget}` (also readable "
        "as attributes, e.g. `r.success`, `r.value`) and never raises. A short receipt of what "
        "physically happened is appended to the cell output (at most 20 per cell). Units are SI "
        "(metres, seconds, newtons, radians); positions are in the world frame (x forward from the "
        "robot toward the table, y left, z up); quaternions are [w, x, y, z]. "
        "Calls marked (P) are physical actions and count against the action budget.",
        "",
    ]
    if budgets:
        out += ["Budgets: " + ", ".join(f"{k} {v:g}" for k, v in budgets.items()) + ".", ""]
    for group in registry.GROUPS:
        caps = [c for c in registry.CAPABILITIES if c.group == group]
        if not caps:
            continue
        out += [f"### {_GROUP_TITLES[group]}", ""]
        for c in caps:
            mark = " (P)" if c.physical else ""
            out.append(f"- `robot.{c.signature()}`{mark}: {c.doc}")
            for p in c.params:
                req = "required" if p.required else f"default {p.default!r}"
                choices = f"; one of {', '.join(p.choices)}" if p.choices else ""
                out.append(f"    - `{p.name}` ({req}): {p.doc}{choices}")
            if c.returns:
                out.append(f"    - value: `{c.returns}`")
        out.append("")
    out += [
        "### Other helpers in the session",
        "",
        "- `image(handle, camera='head')`: attach that camera image of an observation to this cell's "
        "output (at most 4 per cell; only the 12 most recent images stay in your context).",
        "- `finish(summary='')`: same as `robot.finish`.",
        "",
        "### Failure categories",
        "",
        failure_vocabulary_md(),
        "",
    ]
    return "\n".join(out)
