"""The scripted expert's driver: plan calls -> cells, a state set up once, restarts by a sentinel.

:class:`ScriptedExpert` runs a task plan (:mod:`captain_ros.policy.expert.plans`). Its first cell
sets up the session state ``S = State(robot, epoch)`` (see :mod:`.kit`) and notes the pose the arm
starts from; each later cell defines the session functions the call needs that the session does
not have yet, then calls it (:class:`~captain_ros.policy.expert.cells.Call`).

Restarts are told by a flag, not by the harness's wording. Every expert cell ends with one
``NOTE {json}`` line, so an output without one comes from a cell that did not complete (an
exception, a timeout, or a session that died). Only then the expert sends a probe cell that prints
``S.epoch``, the sentinel the setup defined: the same epoch means the session still holds my
state and the plan goes on; anything else means the variables were lost, and the next cell sets
the state up again (with the start pose from my notes) before the plan's next call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from captain_ros.core.errors import UnknownNameError
from captain_ros.policy.expert import kit
from captain_ros.policy.expert.cells import Call, Cell, Notes, Plan, has_note, parse_notes
from captain_ros.policy.expert.plans import PLANS
from captain_ros.policy.expert.source import HEADER, definitions

PROBE = ('import json\nprint("NOTE " + json.dumps({"epoch": getattr(globals().get("S"), "epoch", '
         'None)}))')
"""A cell that works in any session: prints the epoch of the state ``S`` (None without one)."""

SETUP_REASONING = ("Set up my session state S (the robot client, the rig, my records of the "
                   "objects) and note the pose I start from; I define each helper the first time "
                   "a cell needs it, and my variables persist across requests.")

MAX_PROBES = 3
"""Consecutive probes without an answer after which the expert gives up (the session is broken)."""


def setup_cell(epoch: int, ready: Mapping[Any, Any] | None = None, have: set[str] | None = None,
               reasoning: str = SETUP_REASONING) -> tuple[Cell, list[str]]:
    """(the cell that creates ``S`` and calls ``start``, the names it defines)."""
    text, new = definitions(["State", "note", "start"], have or ())
    call = Call(reasoning, kit.start, kwargs={"poses": dict(ready)} if ready else {})
    code = "\n".join(p for p in (HEADER, text, f"S = State(robot, {int(epoch)})", call.line()) if p)
    return Cell(reasoning, code), new


class ScriptedExpert:
    """One episode of the expert for ``task`` (a task name in :data:`PLANS`).

    ``instruction`` is the task sentence of TASK.md: colour words in it sharpen the prompts.
    ``wrap`` (e.g. a fault injector) transforms the plan's stream of calls.
    """

    def __init__(self, task: str, instruction: str = "",
                 wrap: Callable[[Plan], Plan] | None = None) -> None:
        if task not in PLANS:
            raise UnknownNameError("task", task, sorted(PLANS))
        self.task = task
        self.instruction = instruction
        plan = PLANS[task](instruction)
        self._plan = wrap(plan) if wrap else plan
        self.have: set[str] = set()
        self.epoch = 0
        self.ready: dict[str, Any] | None = None
        self.done = False
        self.cells = 0
        self.restarts = 0
        self._state = "new"  # new | setup | plan | probe
        self._failed: Notes = {}
        self._probes = 0
        self._resetup = False

    # --- one request ---------------------------------------------------------------------------
    def next_cell(self, last_output: str | None = None) -> Cell | None:
        """The next request's cell given the previous cell's output; ``None`` when finished."""
        if self.done:
            return None
        cell = self._next(last_output)
        if cell is None:
            self.done = True
        else:
            self.cells += 1
        return cell

    def _next(self, out: str | None) -> Cell | None:
        if self._state == "new":
            return self._setup()
        if self._state == "probe":
            return self._after_probe(out)
        if not has_note(out):
            return self._probe(parse_notes(out or ""))
        self._probes = 0
        notes = parse_notes(out or "")
        if self._state == "setup":
            self._state = "plan"
            self._remember_ready(notes)
            return self._advance(None)
        return self._advance(notes)

    def _setup(self) -> Cell:
        self.epoch += 1
        self.have = set()
        cell, new = setup_cell(self.epoch)
        self.have.update(new)
        self._state = "setup"
        return cell

    def _remember_ready(self, notes: Notes) -> None:
        poses = notes.get("poses")
        if isinstance(poses, dict) and poses:
            self.ready = poses

    def _probe(self, failed: Notes) -> Cell | None:
        self._probes += 1
        if self._probes > MAX_PROBES:
            return None
        if self._state == "setup":  # the setup itself did not complete: set up again
            return self._setup()
        self._failed = failed
        self._state = "probe"
        return Cell("That cell did not finish (no note): check whether the session still holds my "
                    "state before going on.", PROBE)

    def _after_probe(self, out: str | None) -> Cell | None:
        if not has_note(out):
            return self._probe(self._failed)
        self._probes = 0
        self._state = "plan"
        if parse_notes(out or "").get("epoch") != self.epoch:  # variables lost: set up again first
            self.restarts += 1
            self.epoch += 1
            self.have = set()
            self._resetup = True
        return self._advance(self._failed)

    def _advance(self, notes: Notes | None) -> Cell | None:
        try:
            call = next(self._plan) if notes is None else self._plan.send(notes)
        except StopIteration:
            return None
        return self._render(call)

    def _render(self, call: Call) -> Cell:
        prefix = ""
        reasoning = call.reasoning
        if self._resetup:
            self._resetup = False
            setup, new = setup_cell(self.epoch, self.ready, self.have)
            self.have.update(new)
            prefix = setup.code + "\n"
            reasoning = ("The session lost my state (it was restarted): I set it up again, with "
                         "the start pose I noted, then go on. " + reasoning)
        cell, new = call.cell(self.have)
        self.have.update(new)
        return Cell(reasoning, prefix + cell.code)
