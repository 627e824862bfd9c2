"""The expert's session functions as a helper library defined before the first request.

CaPtain trains its student on trajectories rewritten onto a small helper library (section 3.2:
``val``, ``need``, ``downq``, ``go``), so a small model writes calls, not thousands of tokens of
helper code. The ``helpers`` prompt profile does the same with the expert's own session functions
(:mod:`.source`): the harness runs :func:`library_source` in the session at start-up (and after a
restart), TASK.md lists the entry points (:func:`library_index`, under :data:`LIBRARY_HEADING`),
and the expert, seeing that heading, sends only its call lines. Same functions, same receipts;
only who writes the definitions changes.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from functools import cache
from typing import Any

import captain_ros.policy.expert.plans  # noqa: F401 - registers every plan's session functions
from captain_ros.policy.expert.source import (
    _REGISTRY,
    HEADER,
    closure,
    definitions,
    registered,
    uses,
)

LIBRARY_HEADING = "## Helpers (already defined in your session)"
"""The TASK.md heading under which the entry points are listed; a policy that finds it in TASK.md
may call the helpers without defining them."""

ALWAYS = ("State", "note", "start", "finish")
"""Entry points even though other helpers use them (set-up, notes, completion)."""
SUMMARY_CHARS = 72
"""Longest description of a helper in the index (the full docstring costs a small student tokens)."""


@cache
def library_source() -> str:
    """Every registered session function, dependencies first (what the expert would send)."""
    text, _ = definitions(registered())
    return HEADER + "\n" + text


def _referenced(fn: Callable[..., Any]) -> list[Any]:
    """The objects ``fn``'s source names (``x`` and ``module.x``), looked up in its globals."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):  # no source: nothing to follow
        return []
    g = getattr(fn, "__globals__", {})
    out: list[Any] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.append(g.get(node.id))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            mod = g.get(node.value.id)
            out.append(getattr(mod, node.attr, None) if inspect.ismodule(mod) else None)
    return out


@cache
def task_helpers(task: str) -> tuple[str, ...]:
    """The session functions the expert's plans for ``task`` (plan and resume) can reach: the
    ones they, the host-side routines and the plan classes they call name, :data:`ALWAYS`, and
    every helper those use, in registration order (read from the source, not from one run)."""
    from captain_ros.core.errors import UnknownNameError
    from captain_ros.policy.expert.plans import PLANS, RESUME

    if task not in PLANS:
        raise UnknownNameError("task with an expert plan", task, sorted(PLANS))
    found: set[str] = set(ALWAYS)
    seen: set[int] = set()
    todo: list[Any] = [PLANS[task], RESUME[task]]
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for obj in _referenced(fn):
            name = getattr(obj, "__name__", None)
            if name is not None and _REGISTRY.get(name) is obj:
                found.add(name)
            elif not getattr(obj, "__module__", "").startswith("captain_ros.policy.expert"):
                continue
            elif inspect.isfunction(obj):
                todo.append(obj)
            elif inspect.isclass(obj):  # a plan's helper class: all its methods
                todo.extend(f for f in vars(obj).values() if inspect.isfunction(f))
    return tuple(closure(found))


def entry_points(task: str | None = None) -> tuple[str, ...]:
    """The helpers a cell calls: those no other helper uses, and :data:`ALWAYS`, in order; of
    every task, or (``task``) of those :func:`task_helpers` finds for it."""
    names = registered() if task is None else list(task_helpers(task))
    used = {u for n in names for u in uses(n)}
    return tuple(n for n in names if n not in used or n in ALWAYS)


def _signature(name: str) -> str:
    tree = ast.parse(inspect.getsource(_REGISTRY[name]).lstrip())
    node = tree.body[0]
    if isinstance(node, ast.ClassDef):  # the class: its constructor's arguments
        init = next(
            (b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None
        )
        if init is None:
            return f"{name}()"
        node = init
        args = ast.arguments(
            posonlyargs=[],
            args=init.args.args[1:],
            vararg=init.args.vararg,
            kwonlyargs=init.args.kwonlyargs,
            kw_defaults=init.args.kw_defaults,
            kwarg=init.args.kwarg,
            defaults=init.args.defaults,
        )
    else:
        assert isinstance(node, ast.FunctionDef)
        args = node.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    return f"{name}({ast.unparse(args)})"


def _summary(name: str, limit: int = SUMMARY_CHARS) -> str:
    """The docstring's first sentence, cut at a word boundary near ``limit`` characters."""
    doc = " ".join((inspect.getdoc(_REGISTRY[name]) or "").split()).replace("``", "`")
    head = doc.partition(". ")[0].rstrip(".")
    if len(head) > limit:
        head = head[:limit].rsplit(" ", 1)[0].rstrip(",;:(") + " ..."
    return head


@cache
def library_index(task: str | None = None) -> str:
    """The TASK.md section: the heading, how to call, one line per entry point (of ``task``'s
    plans when given, see :func:`entry_points`)."""
    lines = [
        LIBRARY_HEADING,
        "",
        "Set up once with `S = State(robot, 1)`; each helper takes `S` first and returns a dict "
        "of notes; print it with `note(**helper(S, ...))`. Names are your labels for objects "
        "(perceive's keys).",
        "",
    ]
    lines += [f"- `{_signature(n)}`: {_summary(n)}" for n in entry_points(task)]
    return "\n".join(lines) + "\n"
