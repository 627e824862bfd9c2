"""Session functions: real, checked Python that the expert sends into the policy's session as text.

The sandboxed session cannot import captain_ros, and a recorded trajectory must stay
self-contained Python that a student learns to write. So the expert's helpers are ordinary
functions in ordinary modules (linted, type-checked, unit-tested), registered with
:func:`in_session`, and the expert writes their *source* into a cell the first time a cell calls
them: :func:`definitions` renders the functions a cell needs and every session function they use,
transitively, in registration order, minus those the session already has.

The text is the function's syntax tree without its docstring, type annotations and decorators
(``ast.unparse``): the same code, without what only the maintainers and mypy read, so a student
spends no tokens on it. Session functions may use only what the session has: ``math``, ``json``,
``np`` (numpy), their arguments (the robot client travels in the explicit state object, never as a
global) and other session functions.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from captain_ros.core.errors import InvalidArgumentError

T = TypeVar("T", bound=Callable[..., Any])

HEADER = "import json, math\nimport numpy as np"
"""First lines of the expert's first cell in a session (``np`` and ``math`` are pre-imported by
the harness; importing them again costs little and survives a policy that rebound them)."""

_REGISTRY: dict[str, Callable[..., Any]] = {}
_TEXT: dict[str, str] = {}
_USES: dict[str, frozenset[str]] = {}


def in_session(obj: T) -> T:
    """Register a function or class as session code (its name must be unique)."""
    name = obj.__name__
    old = _REGISTRY.get(name)
    if (
        old is not None
        and old is not obj
        and (old.__module__, old.__qualname__) != (obj.__module__, obj.__qualname__)
    ):
        raise InvalidArgumentError(
            f"two session functions named {name!r}: {old.__module__} and {obj.__module__}"
        )
    _REGISTRY[name] = obj
    _TEXT.pop(name, None)
    _USES.pop(name, None)
    return obj


class _Strip(ast.NodeTransformer):
    """Drop docstrings, annotations and decorators (what runs stays the same)."""

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body = body[1:]
        return body or [ast.Pass()]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.decorator_list = []
        node.returns = None
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                arg.annotation = None
        node.body = self._body(node.body)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.generic_visit(node)
        node.decorator_list = []
        node.body = self._body(node.body)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def _tree(name: str) -> ast.Module:
    obj = _REGISTRY[name]
    tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    stripped = _Strip().visit(tree)
    assert isinstance(stripped, ast.Module)
    return ast.fix_missing_locations(stripped)


def session_text(name: str) -> str:
    """The source text the session gets for the registered function or class ``name``."""
    if name not in _REGISTRY:
        raise InvalidArgumentError(f"{name!r} is not a session function")
    if name not in _TEXT:
        _TEXT[name] = ast.unparse(_tree(name))
    return _TEXT[name]


def _bound(tree: ast.AST, top: str) -> set[str]:
    """Names bound inside the definition ``top`` (parameters, assignments, loop and comprehension
    targets, nested definitions and imports), i.e. not globals of the session."""
    bound: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            bound.add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name != top:
            bound.add(n.name)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
    return bound


def free_names(name: str) -> frozenset[str]:
    """Global names the session text of ``name`` reads (what the session must already have)."""
    tree = _tree(name)
    loads = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return frozenset(loads - _bound(tree, name) - {name})


def uses(name: str) -> frozenset[str]:
    """Session functions that ``name`` refers to directly (by name)."""
    if name not in _USES:
        _USES[name] = frozenset(n for n in free_names(name) if n in _REGISTRY)
    return _USES[name]


def robot_calls(names: Iterable[str]) -> frozenset[str]:
    """Robot capabilities (``S.robot.<name>``) that ``names`` and their dependencies may call."""
    found: set[str] = set()
    for n in closure(names):
        for node in ast.walk(_tree(n)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "robot"
            ):
                found.add(node.attr)
    return frozenset(found)


def closure(names: Iterable[str]) -> list[str]:
    """``names`` and every session function they use, transitively, in registration order."""
    todo, seen = list(names), set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        if n not in _REGISTRY:
            raise InvalidArgumentError(f"{n!r} is not a session function")
        seen.add(n)
        todo.extend(uses(n))
    return [n for n in _REGISTRY if n in seen]


def definitions(names: Iterable[str], have: Iterable[str] = ()) -> tuple[str, list[str]]:
    """(source text, names defined) for ``names`` and their dependencies not in ``have``."""
    have = set(have)
    todo = [n for n in closure(names) if n not in have]
    return "\n".join(session_text(n) for n in todo), todo


def registered() -> tuple[str, ...]:
    """Every registered session name, in registration order."""
    return tuple(_REGISTRY)


def literal(value: Any) -> str:
    """``repr`` of a plain literal (str, number, bool, None, and tuples/lists/dicts of them);
    anything else is refused, so a call line never depends on an object's repr."""
    text = repr(value)
    try:
        ok = ast.literal_eval(text) == value
    except (ValueError, SyntaxError):
        ok = False
    if not ok:
        raise InvalidArgumentError(
            f"a session call argument must be a plain literal, got {text:.80}"
        )
    return text
