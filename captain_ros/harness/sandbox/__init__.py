"""The sandbox: where policy code runs, apart from the harness that answers its robot calls.

A :class:`PythonSession` (its limits, results and handler in :mod:`.contract`) keeps one child
process (:mod:`.child`, started by :mod:`.spawn`) whose globals persist across cells; the two talk
in size- and depth-capped JSON frames (:mod:`.wire`). The child is confined by kernel layers
(:mod:`.isolation`: network namespace, rlimits, Landlock, seccomp) and by an audit hook that policy
code cannot reach (:mod:`.hook`, enforcing the tables of :mod:`.rules`); :mod:`.ns_digest` digests
its variables after
every cell so a replay can be checked. Nothing here knows about episodes, budgets or robots: the
session hands each call to a :class:`CellHandler`.

Exports: :class:`PythonSession`, :class:`SessionConfig`, :class:`CellResult`,
:class:`CellHandler`, :class:`SandboxUnavailableError`.
"""

from captain_ros.harness.sandbox.session import (
    CellHandler,
    CellResult,
    PythonSession,
    SandboxUnavailableError,
    SessionConfig,
)

__all__ = ["CellHandler", "CellResult", "PythonSession", "SandboxUnavailableError", "SessionConfig"]
