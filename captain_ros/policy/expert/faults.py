"""Seeded fault injection: the scripted expert making named mistakes at set rates.

A cheap policy mix with a spread of outcomes (for the critic of CaPtain section 3.3, and as a
faulty student for RE-0): the clean expert's plan, with its stream of calls transformed by a
:class:`FaultInjector`. Every fault belongs to one phase of a task, has its *opportunities* (the
calls where it can strike) and a rate, the probability that it strikes at an opportunity; each
fault strikes at most once per episode (later opportunities are clean), so an episode's outcome
can be traced to the faults that fired.

=================  ========  ===============================================================
fault              phase     what happens at an opportunity
=================  ========  ===============================================================
wrong_object       perceive  before the first grasp of an object, its record is replaced by the
                             nearest *other* object on the table (none: no effect)
grasp_offset       grasp     the grasp is aimed ``offset_m`` off in a random direction (the
                             drawer handle: along the pull direction)
premature_release  carry     right after a grasp has lifted (the handle: before the pull; the
                             box: after the lift), one jaw lets go
place_offset       place     before a placement or insertion, the destination's record is
                             shifted ``offset_m`` in a random direction
skip_verify        verify    a fresh verification is not made: the plan is told it succeeded, so
                             finish() follows without fresh evidence
early_finish       finish    after a grasp or a placement, finish() is called before verifying
=================  ========  ===============================================================

Deterministic given (task, episode seed, fault seed): each fault draws from its own generator
``numpy.random.default_rng([fault seed, crc32(task), episode seed, crc32(fault)])``, one draw per
opportunity. The fired faults are :class:`FaultEvent` records (the policy attaches them to its
reply's ``info`` at the request that carries them).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.expert import skills
from captain_ros.policy.expert.cells import Call, Notes, Plan
from captain_ros.policy.expert.kit import State, holding, val
from captain_ros.policy.expert.look import measure
from captain_ros.policy.expert.plans import insertion, open_drawer, two_arm_lift
from captain_ros.policy.expert.source import in_session

FAULTS: dict[str, str] = {
    "wrong_object": "perceive",
    "grasp_offset": "grasp",
    "premature_release": "carry",
    "place_offset": "place",
    "skip_verify": "verify",
    "early_finish": "finish",
}
"""Fault name -> the task phase it strikes."""

HANDLE_SHIFTS = (0.012, 0.0, 0.024, -0.01)
"""grab_handle's default shifts [m] (a grasp_offset moves them all)."""
DEFAULT_RATE = 0.15
"""Rate of every fault in the default mix (``scripted-faulty`` without rates)."""

GRASPS = {skills.descend: None, open_drawer.grab_handle: "handle", two_arm_lift.grab_box: "box"}
"""Grasp calls -> the object they grasp (None: the call's first argument)."""
LIFTS = (skills.close_lift, open_drawer.grab_handle, two_arm_lift.lift_box)
"""Calls after which the object is held up (the handle: grasped)."""
PLACES = {skills.place: None, insertion.insert: "block"}
"""Placement calls -> their destination (None: the call's second argument)."""
AVOID = ("plate", "blue_cube", "green_cube", "cabinet", "block")
"""Task objects a wrong_object mistake does not take for the object (destinations, supports)."""
CHECKS: dict[Any, Notes] = {
    skills.verify: {"dist": 0.0, "resting": True, "gap": 0.0, "cam": "head"},
    insertion.check_peg: {"dist": 0.0, "sunk": 0.02},
    open_drawer.recheck_handle: {"opened": 0.12, "off_exp": 0.0},
    two_arm_lift.box_bottom: {"bottom": 0.1},
}
"""Verification calls and the notes a skipped one pretends (what the plan needs to go on)."""


@dataclass(frozen=True)
class FaultSpec:
    """Which faults, how often, how large.

    Attributes:
        rates: Fault name -> probability of striking at each opportunity, in [0, 1].
        seed: The fault seed (with task and episode seed it fixes every draw).
        offset_m: Size of grasp_offset and place_offset [m].
    """

    rates: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(FAULTS, DEFAULT_RATE))
    seed: int = 0
    offset_m: float = 0.03

    def __post_init__(self) -> None:
        for name, rate in self.rates.items():
            if name not in FAULTS:
                raise InvalidArgumentError(f"unknown fault {name!r}; valid: {', '.join(FAULTS)}")
            if not (isinstance(rate, int | float) and 0.0 <= rate <= 1.0):
                raise InvalidArgumentError(f"fault rate {name}={rate!r} is not in [0, 1]")
        if not (isinstance(self.offset_m, int | float) and 0.0 < self.offset_m <= 0.2):
            raise InvalidArgumentError(f"offset_m={self.offset_m!r} must be in (0, 0.2] m")

    @classmethod
    def parse(cls, text: str) -> FaultSpec:
        """``"grasp_offset=0.3,early_finish=0.1,seed=7,offset_m=0.02"``; empty: the default mix."""
        if not text.strip():
            return cls()
        rates: dict[str, float] = {}
        extra: dict[str, Any] = {}
        for item in text.split(","):
            key, sep, value = item.strip().partition("=")
            if not sep:
                raise InvalidArgumentError(f"fault spec item {item!r} is not NAME=VALUE")
            try:
                number = float(value)
            except ValueError:
                raise InvalidArgumentError(f"fault spec value {item!r} is not a number") from None
            if key == "seed":
                if number != int(number):
                    raise InvalidArgumentError(f"fault seed {value!r} is not an integer")
                extra["seed"] = int(number)
            elif key == "offset_m":
                extra["offset_m"] = number
            else:
                rates[key] = number
        return cls(rates=rates or dict.fromkeys(FAULTS, DEFAULT_RATE), **extra)

    def to_text(self) -> str:
        items = [f"{k}={v:g}" for k, v in self.rates.items()]
        return ",".join([*items, f"seed={self.seed}", f"offset_m={self.offset_m:g}"])


@dataclass(frozen=True)
class FaultEvent:
    """One fault that struck: at which request (of the episode), on which call, with what."""

    fault: str
    phase: str
    call: str
    request: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "phase": self.phase,
            "call": self.call,
            "request": self.request,
            "detail": dict(self.detail),
        }


# --- session functions only faulty episodes send --------------------------------------------
@in_session
def other_object(S: State, name: str, avoid: tuple[str, ...] = ()) -> dict[str, Any]:
    """Mistake: take the nearest other object on the table (not ``name``, not ``avoid``) for
    ``name``."""
    H = val(S.robot.observe(), "handle")
    me = np.asarray((S.D.get(name) or {}).get("centroid_m", [9.0, 9.0, 9.0]), dtype=float)
    away = [np.asarray(S.D[a]["centroid_m"], dtype=float) for a in avoid if S.D.get(a)]

    def far(d: dict[str, Any], c: np.ndarray) -> bool:
        return bool(np.linalg.norm(np.asarray(d["centroid_m"][:2], dtype=float) - c[:2]) > 0.04)

    dets = val(S.robot.segment("objects", handle=H), "detections", default=[]) or []
    cands = [
        d for d in dets if d["centroid_m"][2] < 0.15 and far(d, me) and all(far(d, a) for a in away)
    ]
    cands.sort(
        key=lambda d: float(np.linalg.norm(np.asarray(d["centroid_m"][:2], dtype=float) - me[:2]))
    )
    g = measure(S, cands[0]) if cands else None
    if g is None:
        return {"wrong": None}
    S.D[name], S.G[name] = cands[0], g
    return {"wrong": cands[0].get("label"), "c": [round(v, 4) for v in g["center_m"]]}


@in_session
def skew(S: State, name: str, dx: float, dy: float) -> dict[str, Any]:
    """Mistake: my record of ``name`` is off by (dx, dy) [m]."""
    g = dict(S.G[name])
    g["center_m"] = [g["center_m"][0] + dx, g["center_m"][1] + dy, g["center_m"][2]]
    S.G[name] = g
    return {"skewed": name}


@in_session
def let_go(S: State, arm: str | None = None) -> dict[str, Any]:
    """Mistake: open the jaw now."""
    r = S.robot.release(arm=arm)
    return {"released": val(r, "released"), "held": holding(S, arm)}


# --- the injector --------------------------------------------------------------------------
class FaultInjector:
    """Transforms one episode's plan (``wrap``) and records the faults that fired (``events``)."""

    def __init__(self, spec: FaultSpec, task: str, episode_seed: int) -> None:
        self.spec = spec
        self.task = task
        self.episode_seed = int(episode_seed)
        self._rng = {
            n: np.random.default_rng(
                [spec.seed, zlib.crc32(task.encode()), self.episode_seed, zlib.crc32(n.encode())]
            )
            for n in FAULTS
        }
        self.events: list[FaultEvent] = []
        self.opportunities: dict[str, int] = dict.fromkeys(FAULTS, 0)
        self.request: int | None = None  # set by the policy: the request being written
        self._grasped: set[str] = set()

    def reseed(self, sampling_seed: int) -> None:
        """Draw the opportunities from now on from generators that also depend on
        ``sampling_seed`` (a counterfactual continuation's own draw; faults that struck stay)."""
        self._rng = {
            n: np.random.default_rng(
                [
                    self.spec.seed,
                    zlib.crc32(self.task.encode()),
                    self.episode_seed,
                    zlib.crc32(n.encode()),
                    int(sampling_seed) & 0x7FFFFFFF,
                ]
            )
            for n in FAULTS
        }

    def _strikes(self, fault: str) -> bool:
        rate = float(self.spec.rates.get(fault, 0.0))
        if rate <= 0.0 or any(e.fault == fault for e in self.events):
            return False
        self.opportunities[fault] += 1
        return bool(self._rng[fault].random() < rate)

    def _fire(self, fault: str, call: Call, **detail: Any) -> None:
        self.events.append(FaultEvent(fault, FAULTS[fault], call.name, self.request, detail))

    def _direction(self, fault: str) -> tuple[float, float]:
        a = float(self._rng[fault].uniform(-math.pi, math.pi))
        return round(self.spec.offset_m * math.cos(a), 4), round(
            self.spec.offset_m * math.sin(a), 4
        )

    def wrap(self, plan: Plan) -> Plan:
        """The plan's calls with the faults applied."""
        try:
            call = next(plan)
        except StopIteration:
            return
        while True:
            for extra in self._before(call):
                notes = yield extra
                if extra.fn is other_object:
                    self._effect("wrong_object", notes.get("wrong") is not None)
            if call.fn in CHECKS and self._strikes("skip_verify"):
                self._fire("skip_verify", call)
                notes = dict(CHECKS[call.fn])
            else:
                notes = yield self._modified(call)
            for extra in self._after(call, notes):
                done = yield extra
                if extra.fn is skills.finish and done.get("accepted"):
                    return  # the gate took the early finish: the episode is over
            try:
                call = plan.send(notes)
            except StopIteration:
                return

    def _effect(self, fault: str, took: bool) -> None:
        """Note on the fault's event whether the mistake could be made (e.g. another object)."""
        for i, e in enumerate(self.events):
            if e.fault == fault:
                self.events[i] = replace(e, detail={**e.detail, "effect": took})

    def _before(self, call: Call) -> list[Call]:
        out: list[Call] = []
        if call.fn in GRASPS:
            target = GRASPS[call.fn] or str(call.args[0])
            if target not in self._grasped:  # before the first grasp of each object
                self._grasped.add(target)
                if self._strikes("wrong_object"):
                    self._fire("wrong_object", call, object=target)
                    out.append(
                        Call(
                            f"Find the {target.replace('_', ' ')} to grasp.",
                            other_object,
                            (target, tuple(n for n in AVOID if n != target)),
                        )
                    )
        if call.fn in PLACES:
            dest = PLACES[call.fn] or str(call.args[1])
            if dest != "free" and self._strikes("place_offset"):  # a table spot has no record
                dx, dy = self._direction("place_offset")
                self._fire("place_offset", call, object=dest, dx=dx, dy=dy)
                out.append(
                    Call(f"Update where the {dest.replace('_', ' ')} is.", skew, (dest, dx, dy))
                )
        return out

    def _modified(self, call: Call) -> Call:
        if call.fn not in GRASPS or not self._strikes("grasp_offset"):
            return call
        dx, dy = self._direction("grasp_offset")
        if call.fn is open_drawer.grab_handle:  # along the pull direction, outward or inward
            d = round(math.copysign(self.spec.offset_m, dx), 4)
            self._fire("grasp_offset", call, shift=d)
            return replace(
                call,
                kwargs={**call.kwargs, "shifts": tuple(round(s + d, 4) for s in HANDLE_SHIFTS)},
            )
        self._fire("grasp_offset", call, dx=dx, dy=dy)
        return replace(call, kwargs={**call.kwargs, "aim": (dx, dy)})

    def _after(self, call: Call, notes: Notes) -> list[Call]:
        out: list[Call] = []
        held = notes.get("held")
        lifted = call.fn in LIFTS and (
            held is True or (isinstance(held, dict) and bool(held) and all(held.values()))
        )
        if lifted and self._strikes("premature_release"):
            arm = "left" if call.fn is two_arm_lift.lift_box else call.kwargs.get("arm")
            self._fire("premature_release", call, arm=arm)
            out.append(Call("Open the jaw.", let_go, kwargs={"arm": arm} if arm else {}))
        if (lifted or call.fn in PLACES) and self._strikes("early_finish"):
            self._fire("early_finish", call)
            out.append(Call("The task looks done: declare completion.", skills.finish, ("done",)))
        return out
