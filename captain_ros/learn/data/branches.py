"""Branch turns: where the dataset's episodes, after the same steps, go on differently.

A student learns a multi-task plan mostly as habits: after ``start``, ``perceive``, ``descend``
and ``close_lift`` the next call is nearly always the same. Where it is not (restack puts the top
cube aside with ``free_spot``, stack and pick_place re-measure their destination with
``perceive(..., keep=True)``), the next call depends on the task or the scene, and a mistake there
is one sampled decision that ends the episode. The shipped student's false finishes at
temperature 1 on held-out restack all began at that one request (benchmarks/results/rl.md).

Request ``k`` of an episode is a *branch turn* when the code shapes of the :data:`CONTEXT`
requests before it (the code with its string literals blanked, so object names do not count) are
followed, somewhere in the dataset, by more than one code shape. Such a decision is made once or a
few times per episode, like the finish, and :func:`captain_ros.learn.data.rows.turn_weights` can
weight it the same way (``--branch-weight``).

Why two requests: over the expert's successes (train seeds, the six tasks, student profile), the
whole history as context marks restack's request 5 as no branch at all (restack's first
``perceive`` has no ``dest=``, stack's has, so no stack episode shares restack's history), although
that is where the student goes wrong; the last request alone marks 40-55 % of all turns (every
``perceive`` is followed by something else somewhere). Two requests mark restack's requests
2, 5, 10 and 13 (the task's first move, the first cube's destination, the second cube's, the
finish): a third of the turns.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

CONTEXT = 2
"""How many earlier requests' code shapes decide whether the next turn is a branch turn."""
_LITERAL = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")


def code_shape(code: str) -> str:
    """``code`` with its string literals blanked (they may name the episode's objects)."""
    return _LITERAL.sub("''", code)


def request_code(request: dict[str, Any]) -> str:
    """The code one recorded request ran (its calls joined by newlines)."""
    return "\n".join(str(c.get("code", "")) for c in request.get("calls", []))


def branch_turns(episodes: Sequence[Sequence[dict[str, Any]]]) -> list[frozenset[int]]:
    """Per episode (its recorded requests), the 0-based indices of its branch turns (module
    docstring), judged over all of ``episodes`` together."""
    shapes = [tuple(code_shape(request_code(r)) for r in reqs) for reqs in episodes]

    def before(seq: tuple[str, ...], k: int) -> tuple[str, ...]:
        return seq[max(0, k - CONTEXT) : k]

    following: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for seq in shapes:
        for k, shape in enumerate(seq):
            following[before(seq, k)].add(shape)
    return [
        frozenset(k for k in range(len(seq)) if len(following[before(seq, k)]) > 1)
        for seq in shapes
    ]
