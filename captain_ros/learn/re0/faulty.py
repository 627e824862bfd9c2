"""STOPGAP testbed seats until the fault-injecting expert of branch ``expert`` lands on main.

RE-0's testbed (issue 14 item 8) needs a student with known faults, the clean expert as its
teacher and a harmful teacher as control. Branch ``expert`` builds the real ones
(``scripted-faulty:...``, ``ScriptedExpert.takeover``); until they are on main, this module wraps
main's scripted expert:

- :class:`FaultyScripted` (``re0-faulty:place=RATE,grasp=RATE,offset_m=M,seed=N``) is the
  scripted expert whose placement cells (``place``) or grasp-descent cells (``grasp``) are
  shifted ``offset_m`` in a random horizontal direction, each opportunity with its rate, drawn
  from the policy's own sampling generator (seeded by the episode seed and ``seed``;
  :meth:`FaultyScripted.reseed` gives a counterfactual continuation its own sampling seed).
  The injected line is visible in the cell, like the expert branch's faults.
- :meth:`FaultyScripted.teacher` is the clean expert *sharing the student's plan state*: the
  same expert without the fault for the requests it writes (main's expert cannot take over a
  foreign episode, so the clean teacher is the student's own plan, unfaulted). ``harmful`` is
  the same plan with the fault forced at twice the offset: the control whose repairs must be
  rejected.

Replace with ``scripted-faulty`` + ``TakeoverPolicy`` once branch ``expert`` is merged.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.base import Policy, PolicyReply, python_call
from captain_ros.policy.scripted import ScriptedPolicy
from captain_ros.policy.toolcalls import parse_reply

SPEC_PREFIX = "re0-faulty"
TEACHERS = ("clean", "harmful", "self")
_PLACE_RE = re.compile(r"^(txy = np\.array\(.*\)\[:2\] \+ off\[:2\])$", re.MULTILINE)
_GRASP_RE = re.compile(r"^(g = G\[[^\]]+\]; c = np\.array\(g\['center_m'\], dtype=float\))$", re.MULTILINE)


@dataclass(frozen=True)
class FaultSpec:
    """Rates of the two faults (per opportunity), their offset [m] and the sampling seed."""

    place: float = 0.5
    grasp: float = 0.0
    offset_m: float = 0.04
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("place", "grasp"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise InvalidArgumentError(f"fault rate {name} must be in [0, 1]")
        if not 0.0 < self.offset_m < 0.2:
            raise InvalidArgumentError("offset_m must be in (0, 0.2) m")

    @classmethod
    def parse(cls, text: str) -> FaultSpec:
        """``place=0.5,grasp=0.2,offset_m=0.04,seed=3`` (every key optional)."""
        kw: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, _, val = part.partition("=")
            if key not in ("place", "grasp", "offset_m", "seed"):
                raise InvalidArgumentError(f"unknown fault key {key!r}; valid: place, grasp, offset_m, seed")
            try:
                kw[key] = int(val) if key == "seed" else float(val)
            except ValueError as exc:
                raise InvalidArgumentError(f"fault {key}={val!r} is not a number") from exc
        return cls(**kw)

    def to_text(self) -> str:
        return f"place={self.place:g},grasp={self.grasp:g},offset_m={self.offset_m:g},seed={self.seed}"


class FaultyScripted(Policy):
    """The scripted expert with seeded placement/grasp faults (see the module docstring)."""

    name = SPEC_PREFIX

    def __init__(self, spec: FaultSpec | None = None) -> None:
        self.spec = spec or FaultSpec()
        self.inner = ScriptedPolicy()
        self.episode_seed = 0
        self.rng = np.random.default_rng(0)
        self.faults: list[dict[str, Any]] = []
        self.requests = 0
        self._last: tuple[PolicyReply, tuple[str, ...], list[tuple[str, float, float]]] = (PolicyReply(), (), [])
        self.name = f"{SPEC_PREFIX}:{self.spec.to_text()}"

    def reset(self, task_name: str, seed: int) -> None:
        self.inner.reset(task_name, seed)
        self.episode_seed = int(seed)
        self.reseed(self.spec.seed)
        self.faults = []
        self.requests = 0

    def reseed(self, sampling_seed: int) -> None:
        """Draw the faults of the requests from now on from ``sampling_seed`` (a continuation's
        share of the shared randomness xi)."""
        self.rng = np.random.default_rng([self.episode_seed, int(sampling_seed)])

    def _act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], mode: str) -> PolicyReply:
        """The plan's next request, written as ``mode`` (student / teacher / harmful) would."""
        self.requests += 1
        reply = self.inner.act(messages, tools)
        parsed = parse_reply(reply.content, list(reply.tool_calls) or None, reply.reasoning)
        draws: list[tuple[str, float, float]] = []
        if len(parsed.code_cells) == 1:  # one draw per opportunity, whoever writes the cell
            for kind, pattern in (("place", _PLACE_RE), ("grasp", _GRASP_RE)):
                if pattern.search(parsed.code_cells[0]):
                    draws.append((kind, float(self.rng.random()), float(self.rng.uniform(0.0, 2 * math.pi))))
        self._last = (reply, parsed.code_cells, draws)
        return self.written_as(mode)

    def written_as(self, mode: str) -> PolicyReply:
        """The last request of the plan with ``mode``'s faults (the draws were made once)."""
        reply, cells, draws = self._last
        if len(cells) != 1:
            return reply
        code = cells[0]
        rates = {"place": self.spec.place, "grasp": self.spec.grasp}
        for kind, u, angle in draws:
            if not (mode == "harmful" or (mode == "student" and u < rates[kind])):
                continue
            d = self.spec.offset_m * (2.0 if mode == "harmful" else 1.0)
            dx, dy = round(d * math.cos(angle), 4), round(d * math.sin(angle), 4)
            pattern = _PLACE_RE if kind == "place" else _GRASP_RE
            shift = f"txy = txy + np.array([{dx}, {dy}])" if kind == "place" else \
                f"c = c + np.array([{dx}, {dy}, 0.0])"
            line = pattern.search(code)
            if line is not None:
                code = code[:line.end()] + "\n" + shift + code[line.end():]
            self.faults.append({"fault": kind, "request": self.requests, "offset_m": [dx, dy], "by": mode})
        call_id = str(reply.tool_calls[0].get("id")) if reply.tool_calls else f"call_{self.requests}"
        return PolicyReply(content=reply.content, reasoning=reply.reasoning,
                           tool_calls=(python_call(code, call_id),), model_s=reply.model_s)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        return self._act(messages, tools, "student")

    def teacher(self, kind: str = "clean") -> Policy:
        """The teacher sharing this student's plan state: ``clean``, ``harmful``, or ``self`` (the
        student itself: its paired differences are exactly 0, the null control of pairing)."""
        if kind not in TEACHERS:
            raise InvalidArgumentError(f"unknown testbed teacher {kind!r}; valid: {', '.join(TEACHERS)}")
        return _TeacherView(self, kind)


class _TeacherView(Policy):
    def __init__(self, student: FaultyScripted, kind: str) -> None:
        self.student = student
        self.kind = kind
        self.name = f"scripted-{kind}"

    def reset(self, task_name: str, seed: int) -> None:  # the student owns the shared state
        pass

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        mode = {"clean": "teacher", "harmful": "harmful", "self": "student"}[self.kind]
        return self.student._act(messages, tools, mode)

    def refused(self, reply: PolicyReply) -> PolicyReply:
        """The hybrid did not use this request (outside the contract): the student writes it,
        from the same plan step and the same draws."""
        return self.student.written_as("student")


def make_faulty(spec: str) -> FaultyScripted:
    """``re0-faulty[:place=..,grasp=..,offset_m=..,seed=..]``."""
    head, _, rest = spec.partition(":")
    if head != SPEC_PREFIX:
        raise InvalidArgumentError(f"not a testbed student spec: {spec!r} (expected {SPEC_PREFIX}[:...])")
    return FaultyScripted(FaultSpec.parse(rest))
