"""Static part of the Valid predicate: does a recorded cell depend on something not under a seed?

:func:`check_restorable` is RE-0's static Valid predicate for a decision point of a
:class:`~captain_ros.harness.record.recorded.RecordedEpisode`, built on :func:`nondeterminism`.

A decision point is restored by re-executing the recorded cells in a fresh session
(:mod:`captain_ros.research.re0.replay`). That reproduces the session's variables only when every cell is
a function of the recorded robot Results and of seeded randomness. :func:`nondeterminism` reads a
cell's syntax tree for what is not: wall-clock reads (``time.time``, ``datetime.now``, ...),
unseeded randomness (``random.*``, ``np.random.*`` module functions while the session's generators
were not seeded; ``default_rng()`` without a seed), object identities (``id``) and, when the
session's hash seed was not fixed, ``hash``. The dynamic check (outputs, robot-call arguments and
the variable digest of every replayed cell against the record) catches what a static reading
cannot; this one gives the clear reason early.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from captain_ros.harness.record.recorded import RecordedEpisode

WALL_CLOCK = frozenset(
    {
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "perf_counter",
        "perf_counter_ns",
        "process_time",
        "process_time_ns",
        "thread_time",
        "thread_time_ns",
        "localtime",
        "gmtime",
        "ctime",
        "asctime",
        "strftime",
        "now",
        "utcnow",
        "today",
        "default_timer",
    }
)
CLOCK_MODULES = frozenset({"time", "datetime", "date", "timeit"})
RANDOM_MODULES = frozenset({"random"})
SEEDED_CONSTRUCTORS = frozenset(
    {
        "default_rng",
        "RandomState",
        "Generator",
        "PCG64",
        "MT19937",
        "Philox",
        "SFC64",
        "SeedSequence",
        "Random",
    }
)
ALWAYS_OK = frozenset(
    {
        "sleep",
        "seed",
        "timedelta",
        "timezone",
        "date",
        "datetime",
        "fromtimestamp",
        "fromisoformat",
        "strptime",
        "mktime",
    }
)


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _random_call(name: str, call: ast.Call) -> bool:
    """``name`` is a call on a random module; seeded constructors with an argument are fine."""
    last = name.rsplit(".", 1)[-1]
    if last in SEEDED_CONSTRUCTORS:
        return not (call.args or call.keywords)
    return last not in ALWAYS_OK


def nondeterminism(code: str, *, rng_seeded: bool, hash_seeded: bool) -> str | None:
    """Why ``code`` may not replay identically, or None. Syntax errors are fine (they replay)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            names = {a.name for a in node.names}
            if top in ("time", "datetime", "timeit") and names & WALL_CLOCK:
                return f"it imports a wall-clock reader from {node.module} ({', '.join(sorted(names & WALL_CLOCK))})"
            if (
                not rng_seeded
                and (top in RANDOM_MODULES or node.module == "numpy.random")
                and names - SEEDED_CONSTRUCTORS - ALWAYS_OK
            ):
                return f"it imports unseeded random functions from {node.module}"
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if not name:
            continue
        parts = name.split(".")
        if parts[-1] in WALL_CLOCK and len(parts) > 1 and parts[-2] in CLOCK_MODULES:
            return f"it reads the wall clock ({name})"
        if name == "id":
            return "it uses object identities (id), which differ between processes"
        if name == "hash" and not hash_seeded:
            return "it uses hash() while the session's hash seed was not fixed"
        is_random = (len(parts) > 1 and parts[-2] in RANDOM_MODULES) or (
            len(parts) > 2 and parts[-2] == "random" and parts[-3] in ("np", "numpy")
        )
        if is_random and not rng_seeded and _random_call(name, node):
            return f"it draws unseeded random numbers ({name}) and the session's generators were not seeded"
        if parts[-1] == "default_rng" and not (node.args or node.keywords):
            return f"it builds an unseeded generator ({name}())"
    return None


def seeds_generators(code: str) -> bool:
    """``code`` seeds the session's global generators itself (``random.seed(x)``,
    ``np.random.seed(x)`` with an argument): later draws are under that seed."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(
        isinstance(n, ast.Call) and _dotted(n.func).endswith("random.seed") and bool(n.args)
        for n in ast.walk(tree)
    )


@dataclass(frozen=True)
class Validity:
    """RE-0's Valid predicate for one decision point: ``ok`` or the reason it is refused."""

    ok: bool
    reason: str = ""


def check_restorable(rec: RecordedEpisode, t: int) -> Validity:
    """The static part of the Valid predicate for restoring ``rec`` before request ``t``."""
    if not 1 <= t <= rec.n_requests:
        return Validity(False, f"t = {t} is outside the episode's requests 1..{rec.n_requests}")
    session = rec.start.get("session")
    if not isinstance(session, dict) or session.get("hash_seed") is None:
        return Validity(
            False,
            "the episode's session did not fix its hash seed (recorded before "
            "decision points, or with hash_seed=None): set orders cannot be reproduced",
        )
    rng_seeded = session.get("rng_seed") is not None
    for req in rec.requests[: t - 1]:
        k = int(req["t"])
        for j, cell in enumerate(req.get("calls") or [], 1):
            if cell.get("skipped"):
                continue
            if cell.get("timed_out") or cell.get("crashed"):
                what = "timed out" if cell.get("timed_out") else "crashed the session"
                return Validity(
                    False, f"request {k}, cell {j} {what}: where it stopped is not reproducible"
                )
            code = str(cell.get("code", ""))
            rng_seeded = rng_seeded or seeds_generators(code)
            why = nondeterminism(code, rng_seeded=rng_seeded, hash_seeded=True)
            if why:
                return Validity(False, f"request {k}, cell {j} is not reproducible: {why}")
    return Validity(True)
