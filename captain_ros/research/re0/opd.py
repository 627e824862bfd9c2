"""RE-OPD loss weights and the abstention rules (RE-0 sections 3.3-3.4, 4.1), numpy-free maths.

With a black-box teacher RE-OPD is the hard estimator: a supervised loss over the hybrid
trajectories whose per-turn weights are

    seat turns (the policy in the seat wrote them; g = 0 at their histories)   1    (retention)
    repair turns of an admitted event e                    lambda * g_e * w_e,  w_e = [LCB_e]+
    repair turns of a non-admitted event                   0    (they never enter mu)

g_e = q_e * g_diag * g_env is the intervention probability: g_env = 1 for an admitted, valid
event, g_diag = 1 when the diagnostic fired, q_e the budget allocation (1 unless a budget says
otherwise). The weights go into the dataset rows' ``weights`` (one per assistant message), which
Learning I's SFT multiplies into the per-token loss; the student's tokens after a repair are seat
turns again (the student regenerates everything after the segment).

The seat is the student (RE-OPD-refine) or the teacher (RE-OPD-cold); the maths is the same.
The paper gives no lambda for its experiments; :data:`DEFAULT_LAMBDA` is 1.

Abstention: a task already at >= rho = 80% success is not refined; an empty admission set
closes the gate (the loss degenerates to retention, so no new student is trained).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from captain_ros.core.errors import InvalidArgumentError

DEFAULT_LAMBDA = 1.0
RHO = 0.8
SOURCES = ("seat", "repair")


@dataclass(frozen=True)
class TurnSource:
    """Who wrote one assistant turn of a hybrid trajectory, and under which audited event."""

    source: str
    event_id: str | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise InvalidArgumentError(f"source must be one of {SOURCES}, got {self.source!r}")
        if self.source == "repair" and not self.event_id:
            raise InvalidArgumentError("a repair turn needs the event_id of its audit")


@dataclass(frozen=True)
class AdmittedEvent:
    """What the weights need from one ledger entry."""

    event_id: str
    lcb: float
    admitted: bool
    g: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.g <= 1.0:
            raise InvalidArgumentError(f"g must be in [0, 1], got {self.g}")

    @classmethod
    def from_ledger(cls, entry: Mapping[str, object], g: float = 1.0) -> AdmittedEvent:
        lcb = entry.get("lcb")
        return cls(
            event_id=str(entry["event_id"]),
            lcb=float(lcb) if isinstance(lcb, int | float) else float("-inf"),
            admitted=entry.get("verdict") == "admitted" and bool(entry.get("valid")),
            g=g,
        )


def reopd_weights(
    turns: Sequence[TurnSource],
    events: Mapping[str, AdmittedEvent],
    lam: float = DEFAULT_LAMBDA,
    retention: float = 1.0,
) -> list[float]:
    """Per-turn loss weights of one hybrid trajectory (module docstring); ``retention`` is the
    weight of the seat's own turns (1 in the paper)."""
    if lam < 0 or retention < 0:
        raise InvalidArgumentError(f"lambda and retention must be >= 0, got {lam}, {retention}")
    out = []
    for turn in turns:
        if turn.source == "seat":
            out.append(float(retention))
            continue
        ev = events.get(turn.event_id or "")
        if ev is None:
            raise InvalidArgumentError(f"repair turn of unknown event {turn.event_id!r}")
        g = ev.g if ev.admitted else 0.0
        out.append(lam * g * max(ev.lcb, 0.0))
    return out


def keep_cold_trajectory(
    host_success: bool, turns: Sequence[TurnSource], events: Mapping[str, AdmittedEvent]
) -> bool:
    """RE-OPD-cold keeps verified-completed trajectories: successful, every repair admitted."""
    return host_success and all(
        t.source == "seat"
        or events.get(t.event_id or "") is not None
        and events[t.event_id or ""].admitted
        for t in turns
    )


@dataclass(frozen=True)
class TaskDecision:
    """Whether a task enters refinement, and why (reported either way)."""

    task: str
    refine: bool
    reason: str
    success_rate: float
    rho: float


def refine_or_abstain(task: str, success_rate: float, rho: float = RHO) -> TaskDecision:
    """Tasks already at >= rho success are not refined (the practical Corollary 2)."""
    if not 0.0 <= success_rate <= 1.0 or not 0.0 < rho <= 1.0:
        raise InvalidArgumentError("success_rate must be in [0, 1] and rho in (0, 1]")
    if success_rate >= rho:
        return TaskDecision(
            task,
            False,
            f"abstained: success {success_rate:.0%} >= rho {rho:.0%}",
            success_rate,
            rho,
        )
    return TaskDecision(
        task, True, f"refine: success {success_rate:.0%} < rho {rho:.0%}", success_rate, rho
    )


@dataclass(frozen=True)
class GateState:
    """The generation's gate: open iff at least one event was admitted."""

    open: bool
    n_admitted: int
    n_audited: int
    reason: str


def gate_state(entries: Iterable[Mapping[str, object]]) -> GateState:
    """An empty admission set closes the gate: the recursion abstains for this generation."""
    es = list(entries)
    n_adm = sum(1 for e in es if e.get("verdict") == "admitted" and e.get("valid"))
    if n_adm == 0:
        return GateState(False, 0, len(es), f"gate closed: 0 of {len(es)} audited events admitted")
    return GateState(True, n_adm, len(es), f"gate open: {n_adm} of {len(es)} events admitted")
