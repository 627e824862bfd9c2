"""What the roles see and return.

The Orchestrator commits the coordination fields ``z`` of the next subtask; the Coder writes the two
robot programs that implement it (bounded numbers ``theta`` inside); the Reviser proposes a typed
revision after a rejection. Each role is a prompt with an output schema over some policy backend
(:mod:`captain_ros.research.coevolve.roles.model`) or a scripted rule set
(:mod:`captain_ros.research.coevolve.roles.scripted`); either way the host validates every output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from captain_ros.research.coevolve.memory import ActionExemplar, StrategyRecord
from captain_ros.research.coevolve.observation import Observation
from captain_ros.research.coevolve.plan import Phase, Plan
from captain_ros.research.coevolve.strategy import Coordination, Revision, Strategy
from captain_ros.research.coevolve.verifier import Evidence

T = TypeVar("T")


@dataclass(frozen=True)
class RoleContext:
    """Inputs of one role call.

    Attributes:
        observation: Measurements and route references at the latest trusted checkpoint.
        plan / phase: The semantic plan and its active phase.
        situation / turn: The retrieval keys (phase kind plus route situation; turn direction).
        strategy_records: Retrieved strategy records.
        exemplars: Retrieved action exemplars (Coder only).
        evidence: The verifier's evidence of the last dispatched transaction (if any).
        recent_failures: Failure types since the last accepted transaction.
        constraint: The approved child of a typed revision the output must respect.
        reflection: Flat reflective repair: the textual reflection on the last failure.
        feedback: Why the previous output of this role was refused (invalid, blocked...).
        z: The committed coordination (Coder and Reviser).
        parent: The failed strategy (Reviser).
        transaction / budget: Transactions charged so far and the budget.
        history: Short records of recent transactions.
    """

    observation: Observation
    plan: Plan
    phase: Phase
    situation: str
    turn: str
    strategy_records: tuple[StrategyRecord, ...] = ()
    exemplars: tuple[ActionExemplar, ...] = ()
    evidence: Evidence | None = None
    recent_failures: tuple[str, ...] = ()
    constraint: Revision | None = None
    reflection: str = ""
    feedback: str = ""
    z: Coordination | None = None
    parent: Strategy | None = None
    transaction: int = 0
    budget: int = 80
    history: tuple[dict[str, Any], ...] = ()
    attempt: int = 0


@dataclass(frozen=True)
class RoleOutput(Generic[T]):
    """A role's answer: ``value`` or an ``error`` (unparseable/invalid output), with accounting."""

    value: T | None
    error: str = ""
    raw: str = ""
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProgramPair:
    """The Coder's output: one program per robot (source text, run in the sandbox)."""

    programs: dict[str, str]
    note: str = ""


class Orchestrator(Protocol):
    def commit(self, ctx: RoleContext) -> RoleOutput[Coordination]: ...


class Coder(Protocol):
    def implement(self, ctx: RoleContext) -> RoleOutput[ProgramPair]: ...


class Reviser(Protocol):
    def revise(self, ctx: RoleContext) -> RoleOutput[Revision]: ...


@dataclass
class RoleSet:
    """The roles of one run. ``reviser=None`` = flat reflective repair (no typed revision)."""

    orchestrator: Orchestrator
    coder: Coder
    reviser: Reviser | None
    name: str = "scripted"
    resources: list[Any] = field(default_factory=list)  # objects with close() (a shared backbone)

    def close(self) -> None:
        for r in self.resources:
            r.close()
