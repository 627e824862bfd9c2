"""Host validation of generated robot policies before dispatch.

Checks, in order: output structure (one program per robot), syntax, allowed methods and program
shape (static, on the AST), then - after the programs ran in the sandboxed session and their calls
were recorded - numerical bounds of the effective arguments and the consistency of the paired
policies with each other and with the committed coordination fields. Every failure is a clear
sentence; nothing here raises on untrusted input.

Program shape: optional assignments of arithmetic expressions to local names, then exactly one
skill call on the robot's own handle, then ``<handle>.stop()`` as the last statement. Expressions
may use numbers, strings, lists, local names, ``+ - * / **``, and ``math.<fn>`` / ``abs`` / ``min``
/ ``max`` / ``round``. Nothing else (no imports, loops, attribute access beyond the handle and
``math``, no other names) passes.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any

from captain_ros.research.coevolve.skills import SKILLS, STOP
from captain_ros.research.coevolve.strategy import ROBOTS, Coordination

MAX_PROGRAM_CHARS = 2000
MAX_STATEMENTS = 24
MATH_NAMES = frozenset(
    {
        "pi",
        "tau",
        "sin",
        "cos",
        "tan",
        "atan2",
        "sqrt",
        "hypot",
        "radians",
        "degrees",
        "asin",
        "acos",
        "atan",
        "copysign",
        "fabs",
    }
)
BUILTIN_CALLS = frozenset({"abs", "min", "max", "round", "float"})
_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.Mod)
PAIR_TOL = 1e-6


@dataclass(frozen=True)
class Call:
    """One recorded skill call: ``name`` and its keyword arguments as the program passed them."""

    name: str
    kwargs: dict[str, Any]


def normalize_program(code: str) -> str:
    """Canonical text of a program (comments and formatting removed) for fingerprints."""
    try:
        return ast.unparse(ast.parse(code))
    except (SyntaxError, ValueError):
        return code.strip()


def _expr_problems(node: ast.AST, local: set[str]) -> list[str]:
    out: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant):
            if not isinstance(n.value, (int, float, str)) or isinstance(n.value, bool):
                out.append(f"constant {n.value!r} is not a number or string")
        elif isinstance(n, ast.Name):
            if n.id not in local and n.id not in BUILTIN_CALLS and n.id != "math":
                out.append(f"name {n.id!r} is not defined in this program")
        elif isinstance(n, ast.Attribute):
            if not (
                isinstance(n.value, ast.Name) and n.value.id == "math" and n.attr in MATH_NAMES
            ):
                out.append(f"attribute access {ast.unparse(n)!r} is not allowed (only math.<fn>)")
        elif isinstance(n, ast.Call):
            f = n.func
            ok = (isinstance(f, ast.Name) and f.id in BUILTIN_CALLS) or (
                isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.value.id == "math"
            )
            if not ok or n.keywords:
                out.append(f"call {ast.unparse(n)!r} is not allowed in an argument")
        elif isinstance(n, ast.BinOp):
            if not isinstance(n.op, _BINOPS):
                out.append("only + - * / ** // % are allowed")
        elif isinstance(n, ast.UnaryOp):
            if not isinstance(n.op, (ast.USub, ast.UAdd)):
                out.append("only unary + and - are allowed")
        elif not isinstance(
            n, (ast.List, ast.Tuple, ast.Load, ast.expr_context, ast.operator, ast.unaryop)
        ):
            out.append(f"{type(n).__name__} is not allowed in an expression")
    return out


def check_program(code: Any, handle: str) -> list[str]:
    """Static problems of one robot program for ``handle`` (empty = valid)."""
    if not isinstance(code, str) or not code.strip():
        return ["the program must be non-empty Python source"]
    if len(code) > MAX_PROGRAM_CHARS:
        return [f"the program has {len(code)} characters; at most {MAX_PROGRAM_CHARS}"]
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"syntax error: {exc.msg} (line {exc.lineno})"]
    body = tree.body
    if len(body) > MAX_STATEMENTS:
        return [f"the program has {len(body)} statements; at most {MAX_STATEMENTS}"]
    problems: list[str] = []
    local: set[str] = set()
    calls: list[str] = []
    for i, st in enumerate(body):
        if isinstance(st, ast.Assign) and not calls:
            if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
                problems.append(f"statement {i + 1}: assign to one plain name")
                continue
            name = st.targets[0].id
            if name in (handle, "math", *ROBOTS):
                problems.append(f"statement {i + 1}: {name!r} cannot be reassigned")
            problems += [f"statement {i + 1}: {p}" for p in _expr_problems(st.value, local)]
            local.add(name)
            continue
        if not (
            isinstance(st, ast.Expr)
            and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Attribute)
            and isinstance(st.value.func.value, ast.Name)
        ):
            problems.append(
                f"statement {i + 1}: expected {handle}.<skill>(...) or {handle}.stop(); "
                f"got {type(st).__name__}"
            )
            continue
        call = st.value
        func = call.func
        assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        if func.value.id != handle:
            problems.append(
                f"statement {i + 1}: calls {func.value.id}.{func.attr}; a policy may only "
                f"use its own handle {handle!r}"
            )
            continue
        if func.attr != STOP and func.attr not in SKILLS:
            problems.append(
                f"statement {i + 1}: {func.attr!r} is not an allowed method; allowed: "
                + ", ".join((*SKILLS, STOP))
            )
            continue
        for a in [*call.args, *(k.value for k in call.keywords)]:
            problems += [f"statement {i + 1}: {p}" for p in _expr_problems(a, local)]
        if any(k.arg is None for k in call.keywords):
            problems.append(f"statement {i + 1}: **kwargs is not allowed")
        calls.append(func.attr)
    if not problems:
        actions = [c for c in calls if c != STOP]
        if len(actions) != 1:
            problems.append(
                f"a policy makes exactly one action call; this one makes {len(actions)}"
            )
        if not calls or calls[-1] != STOP or calls.count(STOP) != 1:
            problems.append(f"a policy ends with exactly one explicit {handle}.stop()")
    return problems


def check_params(skill: str, kwargs: Any) -> list[str]:
    """Problems of the effective arguments of one skill call (types, bounds, unknown names)."""
    spec = SKILLS.get(skill)
    if spec is None:
        return [f"unknown skill {skill!r}"]
    if not isinstance(kwargs, dict):
        return ["arguments must be keyword arguments"]
    problems = [
        f"unknown argument {k!r} of {skill}; valid: {', '.join(p.name for p in spec.params)}"
        for k in kwargs
        if spec.param(str(k)) is None
    ]
    for p in spec.params:
        if p.name not in kwargs:
            problems.append(f"{skill} needs {p.name}")
            continue
        v = kwargs[p.name]
        if p.kind == "choice":
            if v not in p.choices:
                problems.append(f"{p.name}={v!r} is not one of {', '.join(p.choices)}")
        elif p.kind == "float":
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                problems.append(f"{p.name} must be a finite number")
            elif not p.lo <= v <= p.hi:
                problems.append(f"{p.name}={v:g} is outside [{p.lo:g}, {p.hi:g}]")
        else:
            if (
                not isinstance(v, (list, tuple))
                or len(v) != 2
                or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                    for x in v
                )
            ):
                problems.append(f"{p.name} must be two finite numbers [x, y]")
            elif not p.lo - 1e-12 <= math.hypot(*v) <= p.hi + 1e-12:
                problems.append(f"|{p.name}|={math.hypot(*v):.3g} is outside [{p.lo:g}, {p.hi:g}]")
    return problems


def _num(v: Any) -> list[float]:
    return [float(x) for x in v] if isinstance(v, (list, tuple)) else [float(v)]


def _same(a: Any, b: Any) -> bool:
    xa, xb = _num(a), _num(b)
    return len(xa) == len(xb) and all(abs(x - y) <= PAIR_TOL for x, y in zip(xa, xb, strict=True))


def check_pair(z: Coordination, calls: dict[str, list[Call]]) -> list[str]:
    """Consistency of both robots' recorded calls with each other and with ``z``."""
    problems: list[str] = []
    actions: dict[str, Call] = {}
    for robot in ROBOTS:
        seq = calls.get(robot, [])
        names = [c.name for c in seq]
        if names[-1:] != [STOP] or len(seq) != 2:
            problems.append(
                f"{robot}: the program ran {names or 'no calls'}; expected one skill call "
                "then stop()"
            )
            continue
        actions[robot] = seq[0]
        if seq[0].name != z.primitive:
            problems.append(
                f"{robot}: calls {seq[0].name} but the committed primitive is {z.primitive}"
            )
        problems += [f"{robot}: {p}" for p in check_params(seq[0].name, seq[0].kwargs)]
    if problems:
        return problems
    a, b = actions["robot_a"].kwargs, actions["robot_b"].kwargs
    spec = SKILLS[z.primitive]
    if "role" in (p.name for p in spec.params):
        got = (a["role"], b["role"])
        if got != z.roles:
            problems.append(f"the programs use roles {got} but the committed roles are {z.roles}")
        if not spec.admits(z.mode, got):
            problems.append(f"roles {got} are not admissible for {z.primitive} in {z.mode} mode")
    shared = [
        p.name for p in spec.params if p.name not in ("role", "correction_xy", "yaw_correction_rad")
    ]
    for name in shared:
        if not _same(a[name], b[name]):
            problems.append(f"paired policies disagree on {name}: {a[name]} vs {b[name]}")
    if z.primitive == "coordinated_alignment" and not problems:
        for robot, kw in (("robot_a", a), ("robot_b", b)):
            moves = (
                math.hypot(*kw["correction_xy"]) > PAIR_TOL
                or abs(kw["yaw_correction_rad"]) > PAIR_TOL
            )
            if kw["role"] == "reference" and moves:
                problems.append(f"{robot} is the reference and must pass a zero correction")
            if kw["role"] == "corrector" and not moves:
                problems.append(f"{robot} is the corrector but its correction is zero")
    return problems


def effective_theta(calls: dict[str, list[Call]]) -> dict[str, dict[str, Any]]:
    """``theta`` as executed: each robot's action-call arguments, direction vectors normalised."""
    theta: dict[str, dict[str, Any]] = {}
    for robot, seq in calls.items():
        kw = dict(seq[0].kwargs) if seq else {}
        if "direction_xy" in kw:
            x, y = (float(v) for v in kw["direction_xy"])
            n = math.hypot(x, y)
            kw["direction_xy"] = [x / n, y / n]
        theta[robot] = {
            k: ([float(x) for x in v] if isinstance(v, (list, tuple)) else v) for k, v in kw.items()
        }
    return theta
