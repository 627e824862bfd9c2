"""The verified hybrid policy mu (RE-0 eq. 3): the student, except the admitted teacher segments.

mu(c | h) = (1 - g(h)) pi(c | h) + g(h) tau(c | h). With RE-0's deterministic gate, g(h) = 1 on
an admitted history and 0 elsewhere. :class:`HybridPolicy` runs the student and, when the
history it is asked about is an admitted one, lets the teacher write the admitted segment: at
most ``max_segment_requests`` requests, each using only the contract's ``allowed_symbols``; then
control returns to the student, which regenerates everything after the segment from the new
observation (it sees the whole history, the teacher's turns included).

An admitted history is identified the way the ledger names it: task, seed, request index and
the hash of the rendered messages the policy saw (``context_sha256`` of
``trajectory.jsonl``). A history the student reaches again in the same deterministic rollout
(same task, seed and sampling) hashes the same; any other history is the student's alone.

A teacher reply outside the contract (another robot capability, or no code at all) is not
used: the segment ends there and the student answers instead (a teacher sharing the student's
plan state hands that plan step back through its ``refused(reply)``). :attr:`HybridPolicy.turns` says
who wrote each request (the RE-OPD corpus reads it: ``seat`` / ``repair`` turns).

A student with its own plan state (the scripted expert in a
:class:`~captain_ros.research.re0.seats.ScriptedSeat`) is told when control comes back after a
teacher segment (``after_segment``): it takes stock of the scene afresh instead of reading the
teacher's output as its own; the null teacher ``self`` (the student writing its own segment)
shares the plan and hands a refused step back through ``refused``; model students read the
messages.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.harness.record.trajectory import messages_sha256
from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.policy.toolcalls import parse_reply
from captain_ros.research.re0.contracts import RepairContract


@dataclass(frozen=True)
class Admission:
    """An admitted intervention: where (the history) and what (the contract)."""

    event_id: str
    task: str
    seed: int
    boundary_t: int
    context_sha256: str
    contract: RepairContract
    teacher: str = ""
    """The candidate teacher that writes the segment (empty: the generation's first teacher)."""

    def __post_init__(self) -> None:
        if self.contract.boundary_t != self.boundary_t:
            raise InvalidArgumentError("the admission's boundary and its contract's differ")

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "task": self.task,
            "seed": self.seed,
            "boundary_t": self.boundary_t,
            "context_sha256": self.context_sha256,
            "contract": self.contract.to_dict(),
            **({"teacher": self.teacher} if self.teacher else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Admission:
        c = dict(d["contract"])
        contract = RepairContract(
            int(c["boundary_t"]),
            tuple(c["allowed_symbols"]),
            int(c["max_segment_requests"]),
            float(c["kappa"]),
        )
        return cls(
            str(d["event_id"]),
            str(d["task"]),
            int(d["seed"]),
            int(d["boundary_t"]),
            str(d["context_sha256"]),
            contract,
            str(d.get("teacher") or ""),
        )

    @property
    def history_id(self) -> str:
        return f"{self.task}:{self.seed}:t{self.boundary_t}:{self.context_sha256[:12]}"


@dataclass(frozen=True)
class TurnRecord:
    """Who wrote request ``t``: ``seat`` (the student) or ``repair`` (the teacher, under
    ``event_id``), and why a teacher reply was not used (``note``)."""

    t: int
    source: str
    event_id: str | None = None
    note: str = ""


def robot_symbols(code: str) -> set[str]:
    """Robot capabilities (and ``finish``) a cell calls: ``robot.<name>(...)`` and ``finish(...)``;
    ``None`` in the set when the cell does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return {"<unparseable>"}
    out: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "robot"
        ):
            out.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "finish"
        ):
            out.add("finish")
    return out


def within_contract(reply: PolicyReply, contract: RepairContract) -> str:
    """Empty when ``reply`` is an executable segment request inside ``contract``, else why not."""
    parsed = parse_reply(reply.content, list(reply.tool_calls) or None, reply.reasoning)
    if parsed.errors or not parsed.code_cells:
        said = " ".join(str(reply.content or "").split())[:160]
        return "the teacher sent no executable code" + (f" ({said})" if said else "")
    used = set().union(*(robot_symbols(c) for c in parsed.code_cells))
    outside = sorted(used - set(contract.allowed_symbols))
    return f"outside the contract: {', '.join(outside)}" if outside else ""


class HybridPolicy(Policy):
    """mu: ``student`` everywhere except the ``admissions``' teacher segments (module docstring)."""

    def __init__(self, student: Policy, teacher: Policy, admissions: Sequence[Admission]) -> None:
        self.student = student
        self.teacher = teacher
        self.admissions = list(admissions)
        self.name = f"hybrid({student.name}+{teacher.name})"
        self.task, self.seed = "", 0
        self.turns: list[TurnRecord] = []
        self._active: Admission | None = None
        self._used = 0

    def reset(self, task_name: str, seed: int) -> None:
        self.task, self.seed = task_name, int(seed)
        self.student.reset(task_name, seed)
        self.resume_at(task_name, seed, 1)

    def resume_at(
        self, task_name: str, seed: int, t: int, turns: Sequence[TurnRecord] = ()
    ) -> None:
        """Continue an episode at request ``t`` (the student is already positioned there; the
        earlier requests were the student's unless ``turns`` says otherwise)."""
        self.task, self.seed = task_name, int(seed)
        self.teacher.reset(
            task_name, seed
        )  # a takeover teacher starts from nothing; a plan-sharing one ignores it
        self.turns = list(turns) or [TurnRecord(k, "seat") for k in range(1, t)]
        self._active, self._used = None, 0

    def _match(self, t: int, messages: list[dict[str, Any]]) -> Admission | None:
        found = [
            a
            for a in self.admissions
            if a.task == self.task and a.seed == self.seed and a.boundary_t == t
        ]
        if not found:
            return None
        key = messages_sha256(messages)
        return next((a for a in found if a.context_sha256 == key), None)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        t = len(self.turns) + 1
        if self._active is None:
            self._active = self._match(t, messages)
            self._used = 0
            begin = getattr(self.teacher, "begin_segment", None)
            if self._active is not None and callable(begin):  # a takeover teacher starts afresh
                begin(self._active.contract)
        note = ""
        if self._active is not None and self._used < self._active.contract.max_segment_requests:
            reply = self.teacher.act(messages, tools)
            note = within_contract(reply, self._active.contract)
            if not note:
                self._used += 1
                self.turns.append(TurnRecord(t, "repair", self._active.event_id))
                if self._used >= self._active.contract.max_segment_requests:
                    self._active = None  # hand back: the student writes the next request
                return reply
        refused = getattr(self.teacher, "refused", None) if note else None
        self._active = None
        after_repair = bool(self.turns) and self.turns[-1].source == "repair"
        self.turns.append(TurnRecord(t, "seat", None, note))
        if callable(refused):  # a teacher sharing the student's plan state hands its step back
            return refused(reply)
        after = getattr(self.student, "after_segment", None)
        if after_repair and callable(after) and not getattr(self.teacher, "shares_plan", False):
            after()  # a student with its own plan state takes stock of what the teacher did
        return self.student.act(messages, tools)

    def close(self) -> None:
        self.student.close()
        if self.teacher is not self.student:
            self.teacher.close()
