"""The policies that occupy RE-0's seat and write its repairs, built from plain specs in workers.

Seat specs (``student`` of an :class:`~captain_ros.research.re0.rollouts.EventSpec` or a job):

- ``scripted-faulty[:FAULTS]``: the testbed student, the scripted expert with its seeded fault
  injection (:mod:`captain_ros.policy.expert.faults`; the faults of each request are named in
  ``PolicyReply.info["faults"]``), in a :class:`ScriptedSeat`;
- ``scripted``: the clean scripted expert (the teacher in the seat: RE-OPD-cold);
- ``model:FOLDER``: a learned student, a transformers model folder (what ``captain learn sft``
  writes) run in-process by :class:`ModelSeat`.

Teachers: ``takeover`` (:class:`TakeoverTeacher`) is the clean scripted expert taking over a
foreign episode (:meth:`~captain_ros.policy.expert.expert.ScriptedExpert.takeover`): at the start
of an admitted segment it measures where the task stands and continues within the contract's
length and symbols, then hands back. ``takeover-faulty[:FAULTS]`` is the same takeover making the
named seeded mistakes: the harmful control (default :data:`HARMFUL_FAULTS`: the placement shifted
off the plate and its verification skipped). ``self`` is the student writing its own segment
(:class:`SelfTeacher`): the null control, whose paired differences are exactly 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.base import Policy, PolicyReply, python_call
from captain_ros.research.re0.contracts import RepairContract

MODEL_PREFIX = "model:"
FAULTY_PREFIX = "scripted-faulty"
HARMFUL_PREFIX = "takeover-faulty"
HARMFUL_FAULTS = "place_offset=1,skip_verify=1,offset_m=0.12"
"""The harmful control's default mistakes: a placement 12 cm off its destination, not verified."""
SEAT_KINDS = ("scripted-faulty[:FAULTS]", "scripted", "model:FOLDER")
TEACHER_KINDS = ("takeover", "takeover-faulty[:FAULTS]", "self")


def _spec_of(text: str, prefix: str) -> str | None:
    """The fault text of ``prefix[:FAULTS]`` (``""`` for the bare prefix), None for another spec."""
    if text == prefix:
        return ""
    return text[len(prefix) + 1 :] if text.startswith(prefix + ":") else None


class ScriptedSeat(Policy):
    """The scripted expert (clean or faulty) in the seat.

    Its plan lives in the policy, so after a teacher segment (:meth:`after_segment`, called by
    the hybrid policy when control comes back) it takes stock afresh instead of reading the
    teacher's output as its own call's; :meth:`reseed` draws the remaining fault opportunities
    from a paired draw's sampling seed (a clean expert has nothing to draw)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = (
            inner.name if not hasattr(inner, "spec") else f"{FAULTY_PREFIX}:{inner.spec.to_text()}"
        )

    def reset(self, task_name: str, seed: int) -> None:
        self.inner.reset(task_name, seed)

    def reseed(self, sampling_seed: int) -> None:
        injector = getattr(self.inner, "injector", None)
        if injector is not None:
            injector.reseed(sampling_seed)

    def after_segment(self) -> None:
        if self.inner.expert is not None:
            self.inner.expert.take_stock()

    @property
    def events(self) -> list[Any]:
        """The faults that struck in this episode (none for the clean expert)."""
        return list(getattr(self.inner, "events", []))

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        return self.inner.act(messages, tools)


class SelfTeacher(Policy):
    """The student writing its own segment (the null control: teacher arm = student arm)."""

    shares_plan = True

    def __init__(self, student: Policy) -> None:
        self.student = student
        self.name = "self"

    def reset(self, task_name: str, seed: int) -> None:  # the student owns the state
        pass

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        return self.student.act(messages, tools)

    def refused(self, reply: PolicyReply) -> PolicyReply:
        """Outside the contract: the student's step stands, written by the seat."""
        return reply


def seat_engine(folder: str, engine: str | None = None, device: str | None = None) -> str:
    """The engine a model seat runs on: ``engine`` when one is named (not ``auto``), else
    ``llamacpp`` wherever the folder runs on llama.cpp (its own GGUF, a packaged student's
    ``student.json``, or an SFT folder whose adapter was exported for the packaged SmolLM2: then
    exactly what ships, the packaged Q4_1 base plus ``adapter.f16.gguf``) and the device is not a
    GPU; ``transformers`` otherwise (a freshly distilled child that was not exported)."""
    if engine not in (None, "", "auto"):
        return str(engine)
    from captain_ros.policy.engines import runs_on_llamacpp

    return "llamacpp" if device != "cuda" and runs_on_llamacpp(folder) else "transformers"


class ModelSeat(Policy):
    """A model folder in the seat. Its reply depends only on the messages and its sampling seed
    (``stateless``: no rehydration at a decision point); :meth:`reseed` gives a counterfactual
    continuation the shared draw's sampling seed (either engine samples request k of a
    continuation with ``seed + k``); :meth:`reset` seeds sampling by the episode. The engine is
    :func:`seat_engine`'s: llama.cpp for every folder that ships (the fast engine of every
    collection, paired rollout, mu and held-out episode)."""

    stateless = True

    def __init__(self, folder: str, options: Mapping[str, Any] | None = None) -> None:
        from captain_ros.policy.config import PolicyConfig
        from captain_ros.policy.factory import make_policy

        opts = {
            k: v
            for k, v in dict(options or {}).items()
            if k in ("max_new_tokens", "temperature", "device", "engine", "threads")
        }
        opts["engine"] = seat_engine(folder, opts.get("engine"), opts.get("device"))
        self.engine = opts["engine"]
        self.inner = make_policy(PolicyConfig("transformers", model_folder=folder, **opts))
        self.chat = getattr(self.inner, "chat", None)
        self.name = f"{MODEL_PREFIX}{folder}"

    def reset(self, task_name: str, seed: int) -> None:
        self.inner.reset(task_name, seed)
        self.reseed(int(seed))

    def reseed(self, sampling_seed: int) -> None:
        if self.chat is not None:
            self.chat.seed = int(sampling_seed)
            self.chat.requests = 0

    def describe(self) -> dict[str, Any]:
        return dict(self.inner.describe())

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        return self.inner.act(messages, tools)

    def close(self) -> None:
        self.inner.close()


class TakeoverTeacher(Policy):
    """The scripted expert as a repair teacher for any seat: one fresh takeover per segment,
    bounded by the segment's contract (``begin_segment``, called by the hybrid policy)."""

    name = "scripted-takeover"

    def __init__(self, faults: str | None = None) -> None:
        from captain_ros.policy.expert.faults import FaultSpec

        self.faults = None if faults is None else FaultSpec.parse(faults or HARMFUL_FAULTS)
        if self.faults is not None:
            self.name = f"{HARMFUL_PREFIX}:{self.faults.to_text()}"
        self.seed = 0
        self.sampling_seed: int | None = None
        self.injector: Any = None
        self.task = ""
        self.expert: Any = None
        self.contract: RepairContract | None = None
        self.requests = 0

    def reset(self, task_name: str, seed: int) -> None:
        self.task, self.seed = task_name, int(seed)
        self.expert, self.contract = None, None

    def reseed(self, sampling_seed: int) -> None:
        """A paired draw's own teacher seed: a *sometimes*-harmful takeover (a fault rate strictly
        between 0 and 1) draws its mistakes per draw, so its segment is harmful in some draws and
        clean in others. A clean takeover has nothing to draw, and a fault at rate 1 strikes in
        every draw anyway (its draws stay the episode's, as the testbed's figures were measured)."""
        rates = self.faults.rates.values() if self.faults is not None else ()
        if any(0.0 < float(r) < 1.0 for r in rates):
            self.sampling_seed = int(sampling_seed)

    def begin_segment(self, contract: RepairContract) -> None:
        self.expert, self.contract = None, contract

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        from captain_ros.policy.expert.expert import ScriptedExpert
        from captain_ros.policy.scripted import instruction_from, outputs_since_last_reply

        self.requests += 1
        first = self.expert is None
        if first:
            from captain_ros.policy.expert.faults import FaultInjector

            c = self.contract
            self.injector = (
                None if self.faults is None else FaultInjector(self.faults, self.task, self.seed)
            )
            if self.injector is not None and self.sampling_seed is not None:
                self.injector.reseed(self.sampling_seed)
            self.expert = ScriptedExpert.takeover(
                self.task,
                instruction_from(messages),
                c.max_segment_requests if c else 20,
                c.allowed_symbols if c else None,
                wrap=self.injector.wrap if self.injector else None,
            )
        if self.injector is not None:
            self.injector.request = self.requests
        cell = self.expert.next_cell(None if first else outputs_since_last_reply(messages))
        if cell is None and first and self.contract is not None:
            from captain_ros.policy.expert.expert import setup_symbols

            need = sorted(setup_symbols(True) - set(self.contract.allowed_symbols))
            return PolicyReply(
                content="I cannot take over within this contract: my setup calls " + ", ".join(need)
            )
        if cell is None:
            return PolicyReply(content="The segment is over.")
        return PolicyReply(
            content="",
            reasoning=cell.reasoning,
            tool_calls=(python_call(cell.code, f"call_teacher_{self.requests}"),),
        )


def teacher_symbols(teacher: str) -> tuple[str, ...]:
    """The robot capabilities ``teacher``'s segments call whatever the repair (its proposal for a
    contract's symbols): the scripted takeover's whole vocabulary (its setup reads the robot's
    state and geometry before any repair, so a contract without them cannot be fulfilled); none
    for ``self`` (the student's vocabulary is the boundary's own)."""
    if teacher == "self":
        return ()
    from captain_ros.policy.expert.expert import vocabulary

    return (*sorted(vocabulary() - {"finish"}), "finish")


def seat_profile(spec: str, requested: str | None = None) -> str:
    """The prompt profile a seat's episodes run with: a ``model:FOLDER`` student's trained one
    (its SFT rows, rollouts and audits share one input format; a different ``requested`` one is
    refused), else ``requested`` or ``default``."""
    from captain_ros.harness.episode.profiles import resolve_profile

    folder = spec[len(MODEL_PREFIX) :] if spec.startswith(MODEL_PREFIX) else None
    return resolve_profile(requested, folder)


def seat_options(
    max_new_tokens: int | None = None,
    temperature: float | None = None,
    device: str | None = None,
    engine: str | None = None,
) -> dict[str, Any]:
    """A model seat's options as jobs carry them: the given ones only (a resumed generation
    compares jobs, so every caller builds them here). ``engine``: the inference engine of a model
    seat (:mod:`captain_ros.policy.engines`; ``auto`` runs a folder without an exported GGUF, such
    as a freshly distilled child, in transformers)."""
    given = {
        "max_new_tokens": max_new_tokens,
        "temperature": temperature,
        "device": device,
        "engine": engine,
    }
    return {k: v for k, v in given.items() if v is not None}


def make_seats(
    student: str, teacher: str, options: Mapping[str, Any] | None = None
) -> tuple[Policy, Policy]:
    """Seat and teacher policies from their specs (module docstring)."""
    from captain_ros.policy.factory import make_policy

    harmful = _spec_of(teacher, HARMFUL_PREFIX)
    if teacher not in ("takeover", "self") and harmful is None:
        raise InvalidArgumentError(
            f"unknown teacher {teacher!r}; valid: {', '.join(TEACHER_KINDS)}"
        )
    seat: Policy
    if student == "scripted" or _spec_of(student, FAULTY_PREFIX) is not None:
        seat = ScriptedSeat(make_policy(student))
    elif student.startswith(MODEL_PREFIX):
        seat = ModelSeat(student[len(MODEL_PREFIX) :], options)
    else:
        raise InvalidArgumentError(f"unknown seat {student!r}; valid: {', '.join(SEAT_KINDS)}")
    if teacher == "self":
        return seat, SelfTeacher(seat)
    return seat, TakeoverTeacher(harmful)


def check_teacher(teacher: str) -> None:
    """Refuse a bad teacher spec (and its fault text) before any worker starts."""
    from captain_ros.policy.expert.faults import FaultSpec

    harmful = _spec_of(teacher, HARMFUL_PREFIX)
    if teacher not in ("takeover", "self") and harmful is None:
        raise InvalidArgumentError(
            f"unknown teacher {teacher!r}; valid: {', '.join(TEACHER_KINDS)}"
        )
    if harmful:
        FaultSpec.parse(harmful)
