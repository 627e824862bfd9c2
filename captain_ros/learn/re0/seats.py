"""The policies that occupy RE-0's seat and write its repairs, built from plain specs in workers.

Seat specs (``student`` of an :class:`~captain_ros.learn.re0.rollouts.EventSpec` or a job):

- ``re0-faulty[:place=R,...]``: the testbed's fault-injected expert (:mod:`.faulty`); its teachers
  ``clean`` / ``harmful`` / ``self`` share its plan state;
- ``scripted``: the clean scripted expert (the teacher in the seat: RE-OPD-cold);
- ``model:FOLDER``: a learned student, a transformers model folder (what ``captain learn sft``
  writes) run in-process by :class:`ModelSeat`.

Teacher ``takeover`` (:class:`TakeoverTeacher`) is the scripted expert taking over a foreign
episode (:meth:`~captain_ros.policy.expert.expert.ScriptedExpert.takeover`): at the start of an
admitted segment it measures where the task stands and continues within the contract's length
and symbols, then hands back. It is the teacher of every seat except the testbed's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.re0.contracts import RepairContract
from captain_ros.policy.base import Policy, PolicyReply, python_call

MODEL_PREFIX = "model:"
SEAT_KINDS = ("re0-faulty[:...]", "scripted", "model:FOLDER")
TEACHER_KINDS = ("clean", "harmful", "self", "takeover")


class ModelSeat(Policy):
    """A model folder in the seat. Its reply depends only on the messages and its sampling seed
    (``stateless``: no rehydration at a decision point); :meth:`reseed` gives a counterfactual
    continuation the shared draw's sampling seed; :meth:`reset` seeds sampling by the episode."""

    stateless = True

    def __init__(self, folder: str, options: Mapping[str, Any] | None = None) -> None:
        from captain_ros.policy.factory import make_policy

        opts = {k: v for k, v in dict(options or {}).items()
                if k in ("max_new_tokens", "temperature", "device")}
        self.inner = make_policy("transformers", {**opts, "model_folder": folder})
        self.chat = getattr(self.inner, "chat", None)
        self.name = f"{MODEL_PREFIX}{folder}"

    def reset(self, task_name: str, seed: int) -> None:
        self.inner.reset(task_name, seed)
        self.reseed(int(seed))

    def reseed(self, sampling_seed: int) -> None:
        if self.chat is not None:
            self.chat.seed = int(sampling_seed)
            self.chat.requests = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        return self.inner.act(messages, tools)

    def close(self) -> None:
        self.inner.close()


class TakeoverTeacher(Policy):
    """The scripted expert as a repair teacher for any seat: one fresh takeover per segment,
    bounded by the segment's contract (``begin_segment``, called by the hybrid policy)."""

    name = "scripted-takeover"

    def __init__(self) -> None:
        self.task = ""
        self.expert: Any = None
        self.contract: RepairContract | None = None
        self.requests = 0

    def reset(self, task_name: str, seed: int) -> None:
        self.task = task_name
        self.expert, self.contract = None, None

    def begin_segment(self, contract: RepairContract) -> None:
        self.expert, self.contract = None, contract

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        from captain_ros.policy.expert.expert import ScriptedExpert
        from captain_ros.policy.scripted import instruction_from, outputs_since_last_reply

        self.requests += 1
        first = self.expert is None
        if first:
            c = self.contract
            self.expert = ScriptedExpert.takeover(
                self.task, instruction_from(messages), c.max_segment_requests if c else 20,
                c.allowed_symbols if c else None)
        cell = self.expert.next_cell(None if first else outputs_since_last_reply(messages))
        if cell is None:
            return PolicyReply(content="The segment is over.")
        return PolicyReply(content="", reasoning=cell.reasoning,
                           tool_calls=(python_call(cell.code, f"call_teacher_{self.requests}"),))


def make_seats(student: str, teacher: str, options: Mapping[str, Any] | None = None) -> tuple[Policy, Policy]:
    """Seat and teacher policies from their specs (module docstring)."""
    from captain_ros.learn.re0.faulty import SPEC_PREFIX, make_faulty

    if teacher not in TEACHER_KINDS:
        raise InvalidArgumentError(f"unknown teacher {teacher!r}; valid: {', '.join(TEACHER_KINDS)}")
    if student.startswith(SPEC_PREFIX):
        seat = make_faulty(student)
        return seat, (TakeoverTeacher() if teacher == "takeover" else seat.teacher(teacher))
    if teacher != "takeover":
        raise InvalidArgumentError(f"teacher {teacher!r} shares the testbed student's plan; the seat "
                                   f"{student!r} needs the takeover teacher")
    if student == "scripted":
        from captain_ros.policy.scripted import ScriptedPolicy

        return ScriptedPolicy(), TakeoverTeacher()
    if student.startswith(MODEL_PREFIX):
        return ModelSeat(student[len(MODEL_PREFIX):], options), TakeoverTeacher()
    raise InvalidArgumentError(f"unknown seat {student!r}; valid: {', '.join(SEAT_KINDS)}")
