"""The scripted expert's driver: plan calls -> cells, a state set up once, restarts by a sentinel,
and taking over another policy's episode for a bounded segment.

:class:`ScriptedExpert` runs a task plan (:mod:`captain_ros.policy.expert.plans`). Its first cell
sets up the session state ``S = State(robot, epoch)`` (see :mod:`.kit`) and notes the pose the arm
starts from; each later cell defines the session functions the call needs that the session does
not have yet, then calls it (:class:`~captain_ros.policy.expert.cells.Call`).

Restarts are told by a flag, not by the harness's wording. Every expert cell ends with one
``NOTE {json}`` line, so an output without one comes from a cell that did not complete (an
exception, a timeout, or a session that died). Only then the expert sends a probe cell that prints
``S.epoch``, the sentinel the setup defined: the same epoch means the session still holds my
state and the plan goes on with that cell's (empty) notes; anything else means the variables were
lost, and the next cell sets the state up again (with the start pose from my notes) and the task's
``resume`` plan takes over: it measures afresh where the task stands and goes on from there.

:meth:`ScriptedExpert.takeover` starts the expert in the middle of a foreign episode: the session
holds the other policy's variables and none of mine. The first cell keeps a reference to the
foreign globals (``_foreign = dict(globals())``), defines my state, takes the start pose from the
rig geometry and runs ``resume``. A :class:`Segment` bounds it: at most ``max_requests`` requests
(setup included), only the robot capabilities in ``allowed_symbols``. The segment's last cell
hands back: every foreign name my definitions replaced gets its old value again (my other names
stay), and :attr:`ScriptedExpert.handed_back` is set.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.policy.expert import kit
from captain_ros.policy.expert.cells import Call, Cell, Notes, Plan, has_note, parse_notes
from captain_ros.policy.expert.plans import PLANS, RESUME
from captain_ros.policy.expert.source import HEADER, definitions, registered, robot_calls

PROBE = (
    'import json\nprint("NOTE " + json.dumps({"epoch": getattr(globals().get("S"), "epoch", '
    "None)}))"
)
"""A cell that works in any session: prints the epoch of the state ``S`` (None without one)."""

HAND_BACK = (
    'if "_foreign" in globals():\n'
    "    globals().update({k: v for k, v in _foreign.items() if globals().get(k) is not v})\n"
    "    del _foreign\nprint('NOTE {\"handed_back\": true}')"
)
"""Restores every foreign global my cells rebound (run at the end of a takeover segment)."""

SETUP_REASONING = (
    "Set up my session state S (the robot client, the rig, my records of the "
    "objects) and note the pose I start from; I define each helper the first time "
    "a cell needs it, and my variables persist across requests."
)
LIBRARY_SETUP_REASONING = (
    "Set up my session state S (the robot client, the rig, my records of the "
    "objects) and note the pose I start from; the helpers of TASK.md are "
    "defined already, and my variables persist across requests."
)
TAKEOVER_REASONING = (
    "I take over this episode from here. The session has none of my helpers: set "
    "up my state S (keeping a reference to what the session held, to restore it "
    "when I hand back), take the arms' start pose from the rig geometry, then "
    "measure where the task stands."
)
MAX_PROBES = 3
"""Consecutive probes without an answer after which the expert gives up (the session is broken)."""
TAKEOVER_EPOCH = 100
"""Epoch of a takeover's state (apart from the epochs of an episode the expert started)."""


@dataclass(frozen=True)
class Segment:
    """Bounds of a takeover.

    Attributes:
        max_requests: Requests the expert may make, its setup and hand-back included (>= 1).
        allowed_symbols: Robot capabilities its cells may call (None: all). A call that may need
            another one (judged from the source of every function it uses) ends the segment.
    """

    max_requests: int
    allowed_symbols: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_requests, bool)
            or not isinstance(self.max_requests, int)
            or self.max_requests < 1
        ):
            raise InvalidArgumentError(
                f"max_requests must be an integer >= 1, got {self.max_requests!r}"
            )
        if self.allowed_symbols is not None:
            from captain_ros.api import registry

            valid = [c.name for c in registry.CAPABILITIES]
            for s in self.allowed_symbols:
                if s not in valid:
                    raise UnknownNameError("robot capability", s, valid)
            object.__setattr__(self, "allowed_symbols", frozenset(self.allowed_symbols))

    def allows(self, symbols: Iterable[str]) -> bool:
        return self.allowed_symbols is None or set(symbols) <= self.allowed_symbols


def setup_cell(
    epoch: int,
    ready: Mapping[Any, Any] | None = None,
    have: Iterable[str] = (),
    reasoning: str = SETUP_REASONING,
    takeover: bool = False,
) -> tuple[Cell, list[str]]:
    """(the cell that creates ``S`` and calls ``start``, the names it defines)."""
    names = ["State", "note", "start"] + (["rest_poses"] if takeover and not ready else [])
    text, new = definitions(names, have)
    if ready:
        line = Call(reasoning, kit.start, kwargs={"poses": dict(ready)}).line()
    else:
        line = "note(**start(S, rest_poses(S)))" if takeover else "note(**start(S))"
    parts = [
        "_foreign = dict(globals())" if takeover else "",
        HEADER,
        text,
        f"S = State(robot, {int(epoch)})",
        line,
    ]
    return Cell(reasoning, "\n".join(p for p in parts if p)), new


def setup_symbols(takeover: bool) -> frozenset[str]:
    return robot_calls(["State", "note", "start"] + (["rest_poses"] if takeover else []))


def vocabulary() -> frozenset[str]:
    """Every robot capability the expert's session functions may call (any task, any segment)."""
    return robot_calls(registered())


class ScriptedExpert:
    """One episode of the expert for ``task`` (a task name in :data:`PLANS`).

    ``instruction`` is the task sentence of TASK.md: colour words in it sharpen the prompts.
    ``wrap`` (e.g. a fault injector) transforms the plan's stream of calls. ``segment`` makes it a
    takeover (see :meth:`takeover`). ``preloaded``: the session defines every session function at
    start-up (the ``helpers`` prompt profile), so cells send call lines only; a takeover defines
    its own anyway (the foreign policy may have rebound them).
    """

    def __init__(
        self,
        task: str,
        instruction: str = "",
        wrap: Callable[[Plan], Plan] | None = None,
        segment: Segment | None = None,
        preloaded: bool = False,
    ) -> None:
        if task not in PLANS:
            raise UnknownNameError("task", task, sorted(PLANS))
        self.task = task
        self.instruction = instruction
        self.segment = segment
        self._wrap = wrap or (lambda p: p)
        self._plan = self._wrap((RESUME if segment else PLANS)[task](instruction))
        self.preloaded = preloaded and segment is None
        self.have: set[str] = self._session_has()
        self.epoch = TAKEOVER_EPOCH - 1 if segment else 0
        self.ready: dict[str, Any] | None = None
        self.done = False
        self.handed_back = False
        self.cells = 0
        self.restarts = 0
        self._state = "new"  # new | setup | plan | probe
        self._failed: Notes = {}
        self._probes = 0
        self._resetup = False
        self._owes_hand_back = False

    @classmethod
    def takeover(
        cls,
        task: str,
        instruction: str = "",
        max_requests: int = 20,
        allowed_symbols: Iterable[str] | None = None,
        wrap: Callable[[Plan], Plan] | None = None,
    ) -> ScriptedExpert:
        """The expert taking over a foreign episode for at most ``max_requests`` requests, calling
        only ``allowed_symbols`` (robot capabilities; None: all), then handing back."""
        symbols = None if allowed_symbols is None else frozenset(allowed_symbols)
        return cls(task, instruction, wrap=wrap, segment=Segment(max_requests, symbols))

    def _session_has(self) -> set[str]:
        """The session functions a fresh session holds (all of them when preloaded)."""
        return set(registered()) if self.preloaded else set()

    # --- one request ---------------------------------------------------------------------------
    def next_cell(self, last_output: str | None = None) -> Cell | None:
        """The next request's cell given the previous cell's output; ``None`` when finished (or,
        taking over, when the segment is over and handed back)."""
        if self.done:
            return None
        cell = self._next(last_output)
        if self.segment is not None:
            last = cell is None or self.cells + 1 >= self.segment.max_requests
            if last:
                self.done = True
            if last and self._owes_hand_back and self.cells < self.segment.max_requests:
                cell = self._with_hand_back(cell)
        if cell is None:
            self.done = True
            return None
        self.cells += 1
        return cell

    def _with_hand_back(self, cell: Cell | None) -> Cell:
        """``cell`` followed by my hand-back, which runs even if the cell fails (or the hand-back
        alone when there is no cell)."""
        self._owes_hand_back = False
        self.handed_back = True
        if cell is None:
            return Cell(
                "My segment is over: I hand the episode back, restoring what I rebound.", HAND_BACK
            )
        code = (
            "try:\n"
            + textwrap.indent(cell.code, "    ")
            + "\nfinally:\n"
            + textwrap.indent(HAND_BACK, "    ")
        )
        return Cell(
            cell.reasoning + " This is my last request of the segment: then I hand back.", code
        )

    def take_stock(self) -> None:
        """Another policy wrote the requests since my last cell (a repair segment that handed
        back): my plan's last call never got its notes. The next cell starts the task's ``resume``
        plan in my state ``S`` (the hand-back restored it), which measures afresh where the task
        stands; a lost ``S`` is found by the probe as usual."""
        if self._state == "new" or self.done:
            return
        self._plan.close()
        self._plan = self._wrap(RESUME[self.task](self.instruction))
        self._state, self._probes = "stock", 0

    def _next(self, out: str | None) -> Cell | None:
        if self._state == "new":
            return self._setup()
        if self._state == "stock":  # the output is the other policy's: not my call's notes
            self._state = "plan"
            return self._advance(None)
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

    def _setup(self) -> Cell | None:
        takeover = self.segment is not None
        if takeover and not self.segment.allows(setup_symbols(True)):  # type: ignore[union-attr]
            return None
        self.epoch += 1
        self.have = self._session_has()
        reasoning = (
            TAKEOVER_REASONING
            if takeover
            else (LIBRARY_SETUP_REASONING if self.preloaded else SETUP_REASONING)
        )
        cell, new = setup_cell(self.epoch, have=self.have, takeover=takeover, reasoning=reasoning)
        self.have.update(new)
        self._state = "setup"
        self._owes_hand_back = takeover
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
        return Cell(
            "That cell did not finish (no note): check whether the session still holds my "
            "state before going on.",
            PROBE,
        )

    def _after_probe(self, out: str | None) -> Cell | None:
        if not has_note(out):
            return self._probe(self._failed)
        self._probes = 0
        self._state = "plan"
        if parse_notes(out or "").get("epoch") != self.epoch:  # my variables are lost: set up
            self.restarts += 1  # again, and measure afresh where the task stands
            self.epoch += 1
            self.have = self._session_has()
            self._resetup = True
            self._plan.close()
            self._plan = self._wrap(RESUME[self.task](self.instruction))
            return self._advance(None)
        return self._advance(self._failed)

    def _advance(self, notes: Notes | None) -> Cell | None:
        try:
            call = next(self._plan) if notes is None else self._plan.send(notes)
        except StopIteration:
            return None
        return self._render(call)

    def _render(self, call: Call) -> Cell | None:
        reasoning, prefix = call.reasoning, ""
        if self._resetup:
            setup, new = setup_cell(
                self.epoch, self.ready, self.have, takeover=self.segment is not None
            )
            if self.segment is not None and not self.segment.allows(robot_calls(new)):
                return None
            self.have.update(new)
            prefix = setup.code + "\n"
            reasoning = (
                "The session lost my state (it was restarted): I set it up again, with "
                "the start pose I noted, and measure afresh where the task stands. " + reasoning
            )
        if self.segment is not None and not self.segment.allows(robot_calls([call.name])):
            return None  # the contract does not allow what this call may do: hand back here
        self._resetup = False
        cell, new = call.cell(self.have)
        self.have.update(new)
        return Cell(reasoning, prefix + cell.code)
