"""Locate: the earliest candidate failure boundary h-hat of a failed trajectory, with evidence z.

RE-0 section 3.2: a diagnostic reads a student trajectory and returns the earliest history where a
plausibly causal harmful segment starts, with structured evidence, or abstains (then no teacher is
called). This is the rule-based diagnostic, the default (no model call): it reads the trajectory
log (what the policy saw: cell errors, Results, receipts) and the hidden per-request record
(``privileged.jsonl``: milestones before every request), and collects events per request t:

- ``exception``: a cell of request t ended in a Python error, or the reply's tool call could not
  be run at all (malformed: an unknown tool, unparsable arguments; the harness's notice);
- ``unrealized_effect``: a Result shows an expected effect that did not happen: the jaw closed
  on nothing (a grasp without holding), ``release`` left the object held, a measurement after a
  release shows the object not resting, a physical action failed;
- ``milestone_regression``: a milestone that held before request t no longer holds after it
  while no new milestone was reached (a drop, an object knocked off its support);
- ``other``: ``finish()`` accepted on an unsolved scene, the gate rejecting ``finish()``, goals
  holding without ``finish()`` (a missed finish), a reply without a tool call that ended the
  episode (a learned student's prose where the plan needed a call).

An event at request t is *causally consistent* when the task's milestone ladder (milestones
reached in order, one-shot) never advances after request t: what went wrong there was never
made good later. The boundary is the earliest consistent event whose decision point is also
*executable* (restorable with identity: :func:`~captain_ros.research.re0.decision_points.check_restorable`).
Without one, the diagnostic abstains with the reason. A model diagnostic behind the
OpenAI-compatible client can be layered on top (it may only pick among these candidates); it is
not built here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from captain_ros.research.re0.decision_points import RecordedEpisode, check_restorable

SOURCES = ("exception", "unrealized_effect", "milestone_regression", "other")
PHYSICAL = ("move_to", "hold", "recover", "release")


@dataclass(frozen=True)
class Evidence:
    """One item of z (the admission ledger's ``evidence`` schema)."""

    source: str
    t: int
    detail: str

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(
                f"unknown evidence source {self.source!r}; valid: {', '.join(SOURCES)}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "t": self.t, "detail": self.detail[:300]}


@dataclass(frozen=True)
class Located:
    """The diagnostic's answer: a boundary with evidence, or an abstention with its reason.

    Attributes:
        boundary_t: Request index of h-hat (the teacher would write request ``boundary_t``), or
            None when the diagnostic abstains.
        evidence: z: the events at the boundary, then a summary of the failure.
        reason: Why this boundary (or why it abstained).
        candidates: Every consistent event's request, earliest first.
        capabilities: Robot capabilities the boundary request called (for contracts).
    """

    boundary_t: int | None
    evidence: tuple[Evidence, ...]
    reason: str
    candidates: tuple[int, ...] = ()
    capabilities: tuple[str, ...] = field(default=())

    @property
    def abstained(self) -> bool:
        return self.boundary_t is None


def _ladder(milestones: Sequence[Sequence[bool]]) -> list[int]:
    """Milestones reached in order, one-shot, after each state (monotone)."""
    out, rung = [], 0
    for ms in milestones:
        while rung < len(ms) and ms[rung]:
            rung += 1
        out.append(rung)
    return out


def _current(ms: Sequence[bool]) -> int:
    n = 0
    for m in ms:
        if not m:
            break
        n += 1
    return n


def _call_events(t: int, req: dict[str, Any]) -> list[Evidence]:
    ev = [
        Evidence("exception", t, f"the reply's tool call could not be run: {bad}"[:200])
        for bad in req.get("malformed") or []
    ]
    released = False
    for cell in req.get("calls") or []:
        if cell.get("skipped"):
            continue
        if cell.get("error"):
            ev.append(Evidence("exception", t, str(cell["error"]).strip().splitlines()[-1][:200]))
        for call in cell.get("robot_calls") or []:
            name, res = call.get("name"), call.get("result") or {}
            kwargs, value = call.get("kwargs") or {}, res.get("value") or {}
            if not isinstance(value, dict):
                value = {}
            if (
                name == "move_to"
                and kwargs.get("jaw") in ("close", 0, 0.0)
                and value.get("holding") is False
            ):
                ev.append(
                    Evidence(
                        "unrealized_effect",
                        t,
                        "the jaw closed on nothing (a grasp without holding)",
                    )
                )
            elif name == "release":
                released = True
                if value.get("released") is False:
                    ev.append(Evidence("unrealized_effect", t, "release() left the object held"))
            elif name == "measure_object_geometry" and released and value.get("resting") is False:
                ev.append(
                    Evidence(
                        "unrealized_effect",
                        t,
                        f"after the release {value.get('label', 'the object')} "
                        "is not resting (a placement without resting)",
                    )
                )
            elif name == "finish" and value.get("accepted") is False:
                ev.append(
                    Evidence(
                        "other", t, f"the gate rejected finish(): {str(value.get('reason'))[:160]}"
                    )
                )
            if (
                name in PHYSICAL
                and not res.get("success")
                and res.get("failure_category") != "budget_exhausted"
                and name != "release"
            ):
                ev.append(
                    Evidence(
                        "unrealized_effect",
                        t,
                        f"{name} failed ({res.get('failure_category')}): "
                        f"{str(res.get('message'))[:150]}",
                    )
                )
    return ev


def locate(rec: RecordedEpisode, milestone_names: Sequence[str] = ()) -> Located:
    """The earliest executable, causally consistent failure boundary of ``rec`` (rule-based)."""
    summary = rec.summary
    if summary.get("strict_success"):
        return Located(
            None, (), "the episode succeeded (host success and finish): nothing to repair"
        )
    if len(rec.states) != rec.n_requests + 1:
        return Located(
            None, (), "no complete hidden record (privileged.jsonl): milestones are unknown"
        )
    ms = [s.milestones for s in rec.states]
    ladder = _ladder(ms)
    names = list(milestone_names) or [f"milestone {i + 1}" for i in range(len(ms[0]))]
    events: dict[int, list[Evidence]] = {}
    for req in rec.requests:
        t = int(req["t"])
        events[t] = _call_events(t, req)
        before, after = ms[t - 1], ms[t]
        if _current(after) < _current(before) and ladder[t] == ladder[t - 1]:
            lost = [names[i] for i in range(len(before)) if before[i] and not after[i]]
            events[t].append(
                Evidence(
                    "milestone_regression",
                    t,
                    f"{', '.join(lost) or 'progress'} held before "
                    f"request {t} and not after it, with no new milestone reached",
                )
            )
    solved = [s.t for s in rec.states if s.solved]
    if summary.get("host_success") and not summary.get("finished") and solved:
        first = solved[0]
        if first <= rec.n_requests:
            events.setdefault(first, []).append(
                Evidence(
                    "other",
                    first,
                    "every goal held from here on, but finish() was never called (missed finish)",
                )
            )
    if summary.get("finished") and not summary.get("host_success"):
        t = next(
            (
                int(r["t"])
                for r in rec.requests
                if any(
                    c.get("name") == "finish" and (c.get("result") or {}).get("success")
                    for cell in r.get("calls") or []
                    for c in cell.get("robot_calls") or []
                )
            ),
            rec.n_requests,
        )
        events.setdefault(t, []).append(
            Evidence("other", t, "finish() was accepted on an unsolved scene")
        )
    if summary.get("end_reason") == "no_tool_call" and rec.n_requests:
        events.setdefault(rec.n_requests, []).append(
            Evidence(
                "other",
                rec.n_requests,
                f"the reply to request {rec.n_requests} had no tool call: the episode ended there",
            )
        )
    final = ladder[-1]
    consistent = sorted(t for t, ev in events.items() if ev and ladder[t] == final)
    tail = Evidence(
        "other",
        rec.n_requests,
        f"outcome {summary.get('outcome')}: milestone ladder at "
        f"{final} of {len(names)} at the end"
        + (f" (next: {names[final]})" if final < len(names) else ""),
    )
    refused: list[str] = []
    for t in consistent:
        v = check_restorable(rec, t)
        if v.ok:
            caps = tuple(
                dict.fromkeys(
                    c.get("name")
                    for cell in rec.requests[t - 1].get("calls") or []
                    for c in cell.get("robot_calls") or []
                    if c.get("name")
                )
            )
            why = (
                f"earliest of {len(consistent)} consistent event(s): nothing that went wrong at request "
                f"{t} was made good later (ladder {ladder[t]} = final {final})"
            )
            return Located(t, (*events[t], tail), why, tuple(consistent), caps)
        refused.append(f"request {t}: {v.reason}")
    if not consistent:
        recovered = sorted(t for t, ev in events.items() if ev)
        why = (
            "no structured evidence of a failure in any request"
            if not recovered
            else f"every event (requests {recovered}) was made good later: no causally consistent boundary"
        )
        return Located(None, (tail,), why)
    return Located(
        None,
        (tail,),
        "no consistent boundary is executable: " + "; ".join(refused),
        tuple(consistent),
    )
