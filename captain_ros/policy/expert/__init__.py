"""The scripted expert: a careful code-writing agent per task family (public robot API only).

:class:`ScriptedExpert` drives a task plan (:mod:`captain_ros.policy.expert.plans`): each call to
:meth:`ScriptedExpert.next_cell` gets the output of the previous cell (cell output, receipts) and
returns the next :class:`~captain_ros.policy.expert.skills.Cell`, or ``None`` when the episode is
over (the reply without a tool call that ends it). It reads only what a policy reads: its own
printed notes and receipts. It is the embedded default policy of ``captain run`` and the generator
of synthetic SFT trajectories.
"""

from __future__ import annotations

from captain_ros.core.errors import UnknownNameError
from captain_ros.policy.expert.helpers import HELPERS
from captain_ros.policy.expert.plans import PLANS
from captain_ros.policy.expert.skills import Cell, parse_notes

RESTART_MARKERS = ("variables were lost", "session was restarted", "session restarted")


class ScriptedExpert:
    """One episode of the expert for ``task`` (a task name in :data:`PLANS`).

    ``instruction`` is the task sentence of TASK.md: colour words in it sharpen the prompts."""

    def __init__(self, task: str, instruction: str = "") -> None:
        if task not in PLANS:
            raise UnknownNameError("task", task, sorted(PLANS))
        self.task = task
        self.instruction = instruction
        self._plan = PLANS[task](instruction)
        self._started = False
        self.done = False
        self.cells = 0

    def next_cell(self, last_output: str | None = None) -> Cell | None:
        """The next request's cell given the previous cell's output; ``None`` when finished."""
        if self.done:
            return None
        try:
            if not self._started:
                self._started = True
                cell = next(self._plan)
            else:
                cell = self._plan.send(parse_notes(last_output or ""))
        except StopIteration:
            self.done = True
            return None
        if last_output and any(m in last_output.lower() for m in RESTART_MARKERS):
            # the session lost my helpers and variables: define them again before going on
            cell = Cell(cell.reasoning + " (The session restarted: I define my helpers again.)",
                        HELPERS + "\nG = {}; D = {}; GRASP = {}\n" + cell.code)
        self.cells += 1
        return cell


__all__ = ["HELPERS", "PLANS", "Cell", "ScriptedExpert", "parse_notes"]
