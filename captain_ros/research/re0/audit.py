"""Audit one located failure with every candidate teacher: contracts -> paired rollouts -> ledger.

A generation's candidate teachers (:attr:`~captain_ros.research.re0.loop.LoopConfig.teacher` and
its ``candidates``) each propose their own bounded repairs at the located boundary; each candidate
runs its own contract ladder in increasing kappa (:func:`contract_ladder`), verified by paired
counterfactual rollouts (:class:`~captain_ros.research.re0.rollouts.PairedRunner`), every test
drawing its share of the generation's alpha for that history. Every audited contract is one
ledger line whose ``candidates[0].id`` names the teacher (``takeover@t7``,
``takeover-faulty:place_offset=1,...@t7``), so the ledger says which candidate each verdict is
about: a sometimes-harmful candidate (the faulty takeover) beside the clean takeover is how some
audits end *rejected* (or not admitted), which the unverified control then takes in anyway
(:mod:`~captain_ros.research.re0.control`).

Of the admitted candidates of one event, the one with the highest lower confidence bound is the
event's admission (the hybrid policy runs one teacher segment per history). The first candidate's
event ids are those of a single-teacher generation (``g0:refine:pick_place:3:t7:L4``); candidate
k >= 1 appends ``:c{k}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from captain_ros.api.registry import CAPABILITIES
from captain_ros.research.re0.allocation import AlphaAllocator
from captain_ros.research.re0.contracts import RepairContract, scope_cost, select_smallest_verified
from captain_ros.research.re0.decision_points import RecordedEpisode
from captain_ros.research.re0.hybrid import Admission
from captain_ros.research.re0.ledger import LedgerWriter, ledger_entry
from captain_ros.research.re0.locate import Located
from captain_ros.research.re0.resume import reused, run_jobs
from captain_ros.research.re0.rollouts import EventSpec, PairedRunner, RolloutError
from captain_ros.research.re0.seats import teacher_symbols
from captain_ros.research.re0.verify import (
    Verification,
    VerifierConfig,
    invalid_verification,
    verify,
)

API = tuple(c.name for c in CAPABILITIES)
"""The whole API (the registry's 22 capabilities and ``finish``): the symbols of longer contracts."""


@dataclass
class EventAudit:
    """What auditing one event produced: its ledger entries, the admission (None: no candidate
    admitted), the report items of each audited contract and the rollouts reused on resume."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    admission: Admission | None = None
    audited: list[dict[str, Any]] = field(default_factory=list)
    reused_rollouts: int = 0


def contract_ladder(
    loc: Located, lengths: Sequence[int], teacher: Sequence[str] = ()
) -> list[RepairContract]:
    """Contracts of increasing scope at ``loc``'s boundary: the boundary request's own symbols
    with the ones the teacher's segments need (``teacher``:
    :func:`~captain_ros.research.re0.seats.teacher_symbols`) and ``finish`` for the shortest
    segment, the whole API for the longer ones."""
    assert loc.boundary_t is not None
    own = tuple(dict.fromkeys((*loc.capabilities, *teacher, "finish")))
    out = []
    for i, n in enumerate(sorted(set(lengths))):
        symbols = own if i == 0 else API
        out.append(RepairContract(loc.boundary_t, symbols, n, scope_cost(n, len(symbols))))
    return out


def _verify_event(
    cfg: Any,
    seat: str,
    event_id: str,
    source: str,
    contract: RepairContract,
    alpha: float,
    vcfg: VerifierConfig,
    teacher: str | None = None,
) -> tuple[Verification, PairedRunner]:
    """Verify ``contract`` of ``teacher`` (default: the generation's first teacher)."""
    spec = EventSpec(
        event_id,
        source,
        contract.to_dict(),
        seat,
        teacher or cfg.teacher,
        str(Path(cfg.out) / "rollouts"),
        cfg.backend,
        cfg.noise,
        cfg.channel,
        dict(cfg.seat_options),
    )
    runner = PairedRunner(spec, workers=cfg.workers, runner=partial(run_jobs, resume=cfg.resume))
    try:
        return verify(runner, alpha, vcfg), runner
    except RolloutError as exc:  # the rollouts it took are spent all the same
        v = invalid_verification(str(exc), alpha, vcfg)
        return replace(v, rollouts_spent=len(runner.records)), runner


def audit_event(
    cfg: Any,
    seat: str,
    name: str,
    rec: RecordedEpisode,
    loc: Located,
    alloc: AlphaAllocator,
    ledger: LedgerWriter,
    vcfg: VerifierConfig,
) -> EventAudit:
    """Audit ``loc`` (a located failure of ``rec``, the seat's episode in pass ``name``) with each
    of ``cfg``'s candidate teachers; ledger lines are appended as they are decided."""
    assert loc.boundary_t is not None
    history_id = f"{cfg.task}:{rec.seed}:{name}:t{loc.boundary_t}"
    out = EventAudit()
    best: tuple[float, Admission] | None = None
    for k, teacher in enumerate((cfg.teacher, *cfg.candidates)):
        runners: dict[float, PairedRunner] = {}
        suffix = f":c{k}" if k else ""

        def eid(c: RepairContract, suffix: str = suffix) -> str:
            return (
                f"g{cfg.generation}:{name}:{cfg.task}:{rec.seed}:t{c.boundary_t}"
                f":L{c.max_segment_requests}{suffix}"
            )

        def verify_contract(
            contract: RepairContract,
            alpha: float,
            teacher: str = teacher,
            runners: dict[float, PairedRunner] = runners,
            eid: Any = eid,
        ) -> Verification:
            v, runners[contract.kappa] = _verify_event(
                cfg, seat, eid(contract), str(rec.folder), contract, alpha, vcfg, teacher
            )
            return v

        sel = select_smallest_verified(
            contract_ladder(loc, cfg.segment_lengths, teacher_symbols(teacher)),
            verify_contract,
            alloc,
            history_id,
        )
        for contract, v in sel.audited:
            e = ledger_entry(
                event_id=eid(contract),
                generation=cfg.generation,
                history_id=history_id,
                task=cfg.task,
                seed=rec.seed,
                evidence=[x.to_dict() for x in loc.evidence],
                contract=contract,
                candidates=[
                    {
                        "id": f"{teacher}@t{contract.boundary_t}",
                        "code_sha256": ",".join(runners[contract.kappa].candidate_codes()),
                    }
                ],
                verification=v,
                return_bound=vcfg.return_bound,
            )
            ledger.append(e)
            out.entries.append(e)
            if v.admitted and (best is None or v.lcb > best[0]):
                sha = str(rec.requests[contract.boundary_t - 1].get("context_sha256", ""))
                adm = Admission(
                    eid(contract),
                    cfg.task,
                    rec.seed,
                    contract.boundary_t,
                    sha,
                    contract,
                    teacher if k else "",
                )
                best = (v.lcb, adm)
            out.audited.append(
                {
                    "teacher": teacher,
                    "kappa": contract.kappa,
                    "verdict": v.verdict,
                    "delta_hat": v.delta_hat,
                    "lcb": v.lcb,
                    "rollouts": v.rollouts_spent,
                    "valid_reason": v.valid_reason,
                }
            )
        out.reused_rollouts += sum(reused(x.records) for x in runners.values())
    out.admission = best[1] if best else None
    return out
