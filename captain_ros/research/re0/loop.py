"""One RE-0 pass over a seat: collect -> locate -> contracts -> verify -> ledger -> mu.

:func:`run_pass` is one seat's share of a generation (the loop that ``captain learn re0`` runs is
:func:`captain_ros.research.re0.generation.run_loop`):

1. **collect**: the seat on the training seeds (deterministic mode), each episode with decision
   points (:func:`~captain_ros.research.re0.rollouts.student_job` in the evaluation runner's workers);
   in the refine pass a task already at >= rho = 80 % strict success is not refined (abstention,
   reported);
2. **locate** every failure (:func:`~captain_ros.research.re0.locate.locate`; abstentions listed);
3. **contracts** of increasing scope per boundary (:func:`contract_ladder`);
4. **verify** in increasing kappa with paired counterfactual rollouts from the restored decision
   point in the stochastic mode (:class:`~captain_ros.research.re0.rollouts.PairedRunner`), the
   betting gate with the 8..48 escalation and alpha shared over the generation
   (:class:`~captain_ros.research.re0.allocation.AlphaAllocator`, open-ended series, one allocator
   for every pass); the smallest verified scope is selected; every audited contract goes to
   ``ledger.jsonl``;
5. **mu**: the seat with the admitted segments re-run on the same seeds (J(mu) against J(pi),
   paired McNemar); its trajectories are the pass's corpus candidates
   (:mod:`~captain_ros.research.re0.corpus`). An empty admission set closes the pass's gate
   (reported; no mu is run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.evaluation.runner import EpisodeJob
from captain_ros.evaluation.stats import mcnemar, wilson_interval
from captain_ros.research.re0.allocation import AlphaAllocator
from captain_ros.research.re0.audit import API, _verify_event, audit_event, contract_ladder
from captain_ros.research.re0.decision_points import RecordedEpisode
from captain_ros.research.re0.hybrid import Admission
from captain_ros.research.re0.ledger import LedgerWriter
from captain_ros.research.re0.locate import locate
from captain_ros.research.re0.opd import gate_state, refine_or_abstain
from captain_ros.research.re0.resume import reused, run_jobs
from captain_ros.research.re0.seats import seat_profile
from captain_ros.research.re0.verify import VerifierConfig

__all__ = [
    "API",
    "STUDENT_JOB",
    "LoopConfig",
    "PassResult",
    "_verify_event",
    "contract_ladder",
    "run_pass",
    "seat_jobs",
    "verifier_config",
]

STUDENT_JOB = "captain_ros.research.re0.rollouts:student_job"


@dataclass(frozen=True)
class LoopConfig:
    """One generation's settings (plain data).

    Attributes:
        task / seeds: The task and its training seeds (0-999).
        student / teacher: Seat and teacher specs (:func:`~captain_ros.research.re0.seats.make_seats`).
        out: The generation folder.
        candidates: Further candidate teachers audited beside ``teacher`` at every located
            failure, e.g. a sometimes-harmful ``takeover-faulty:FAULTS``
            (:mod:`~captain_ros.research.re0.audit`; each admission names its teacher).
        workers: Worker processes for episodes and rollouts.
        method / channel: Verifier bound (``betting`` / ``hoeffding``) and return channel.
        noise: The stochastic mode's NoiseSpec dict for verification (None: deterministic).
        segment_lengths: Contract scopes tried, in requests.
        schedule: The escalation levels of M (the last one caps M).
        generation: k.
        backend: ``mujoco`` (or ``fake`` with ``noise=None``, for tests).
        seat_options: A model seat's options (``max_new_tokens``, ``temperature``, ``device``).
        budgets: The episodes' Budgets as a dict (None: the harness's defaults).
        max_events: Audit at most this many located failures per pass (None: all).
        profile: The prompt profile of every seat's episodes (None: a ``model:`` student's
            trained profile, else ``default``): the cold and refine corpora and the distilled
            student share one input format (SFT refuses a corpus of several).
        resume: Reuse every finished episode and rollout under ``out`` whose job and inputs are
            the same (:mod:`~captain_ros.research.re0.resume`).
    """

    task: str
    seeds: tuple[int, ...]
    student: str
    teacher: str = "takeover"
    out: str = "runs/re0"
    candidates: tuple[str, ...] = ()
    workers: int = 2
    method: str = "betting"
    channel: str = "success"
    noise: dict[str, Any] | None = field(default_factory=dict)
    segment_lengths: tuple[int, ...] = (4, 8, 16)
    schedule: tuple[int, ...] = (8, 12, 16, 24, 32, 48)
    generation: int = 0
    backend: str = "mujoco"
    seat_options: dict[str, Any] = field(default_factory=dict)
    budgets: dict[str, Any] | None = None
    max_events: int | None = None
    profile: str | None = None
    resume: bool = False


@dataclass
class PassResult:
    """What one pass produced: its report, the ledger entries it wrote, the admissions, and the
    records of the seat's episodes (``base``) and of mu (``hybrid``, empty when the gate closed)."""

    report: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    admissions: list[Admission] = field(default_factory=list)
    base: list[Any] = field(default_factory=list)
    hybrid: list[Any] = field(default_factory=list)


def seat_jobs(
    cfg: LoopConfig,
    seat: str,
    folder: str,
    seeds: Sequence[int],
    admissions: Sequence[Admission] = (),
) -> list[EpisodeJob]:
    """Whole episodes of ``seat`` (with the admitted segments: mu) on ``seeds``, in the
    generation student's prompt profile (:attr:`LoopConfig.profile`)."""
    profile = seat_profile(cfg.student, cfg.profile)
    return [
        EpisodeJob(
            cfg.task,
            s,
            seat,
            cfg.backend,
            str(Path(cfg.out) / folder / f"seed_{s:04d}"),
            {
                "teacher": _job_teacher(cfg, [a for a in admissions if a.seed == s]),
                "seat_options": dict(cfg.seat_options),
                "budgets": cfg.budgets,
                "admissions": [a.to_dict() for a in admissions if a.seed == s],
                "profile": profile,
            },
        )
        for s in seeds
    ]


def _job_teacher(cfg: LoopConfig, admissions: Sequence[Admission]) -> str:
    """The teacher of one episode's admitted segments (one per episode: the hybrid policy runs
    one teacher; an admission without one is the generation's first teacher's)."""
    named = {a.teacher or cfg.teacher for a in admissions}
    if len(named) > 1:
        raise ValueError(f"one episode's admissions name several teachers: {sorted(named)}")
    return named.pop() if named else cfg.teacher


def verifier_config(cfg: LoopConfig) -> VerifierConfig:
    return VerifierConfig(
        method=cfg.method,
        return_bound=1.0 if cfg.channel == "success" else 1.75,
        schedule=cfg.schedule,
    )


def run_pass(
    cfg: LoopConfig,
    seat: str,
    name: str,
    alloc: AlphaAllocator,
    ledger: LedgerWriter,
    abstain: bool = True,
) -> PassResult:
    """One seat's pass (module docstring); ``name`` is ``refine`` (the student in the seat) or
    ``cold`` (the teacher); ``abstain``: apply the rho = 80 % rule to the seat's success."""
    from captain_ros.tasks import get_task

    names = get_task(cfg.task).milestone_names
    base = run_jobs(
        seat_jobs(cfg, seat, f"{name}_collect", cfg.seeds), cfg.workers, STUDENT_JOB, cfg.resume
    )
    wins = [r.strict_success for r in base]
    report: dict[str, Any] = {
        "seat": seat,
        "seat_success": asdict(wilson_interval(sum(wins), len(wins))),
        "errors": [r.error[-300:] for r in base if r.outcome == "error"],
    }
    res = PassResult(report, base=base)
    report["reused"] = {"episodes": reused(base), "rollouts": 0}
    decision = refine_or_abstain(cfg.task, sum(wins) / max(1, len(wins)))
    report["decision"] = (
        decision.reason if abstain else "repair every failure (no abstention in this pass)"
    )
    if abstain and not decision.refine:
        report["abstained"] = True
        return res
    vcfg = verifier_config(cfg)
    events_report: list[dict[str, Any]] = []
    failures = [r for r in base if not r.strict_success and r.outcome != "error"]
    for r in failures:
        rec = RecordedEpisode.load(r.out_dir)
        loc = locate(rec, names)
        item: dict[str, Any] = {
            "seed": rec.seed,
            "boundary_t": loc.boundary_t,
            "reason": loc.reason,
            "evidence": [e.to_dict() for e in loc.evidence],
        }
        events_report.append(item)
        if loc.boundary_t is None:
            continue
        if (
            cfg.max_events is not None
            and sum("audited" in e for e in events_report) >= cfg.max_events
        ):
            item["reason"] = f"not audited: --max-events {cfg.max_events} reached"
            continue
        audit = audit_event(cfg, seat, name, rec, loc, alloc, ledger, vcfg)
        res.entries += audit.entries
        if audit.admission is not None:
            res.admissions.append(audit.admission)
        item["audited"] = audit.audited
        report["reused"]["rollouts"] += audit.reused_rollouts
    report["events"] = events_report
    gate = gate_state(res.entries)
    report["gate"] = gate.reason
    report["gate_open"] = gate.open
    report["rollouts_spent"] = sum(int(e["rollouts_spent"]) for e in res.entries)
    if not gate.open:
        return res
    seeds = sorted({a.seed for a in res.admissions})
    res.hybrid = run_jobs(
        seat_jobs(cfg, seat, f"{name}_hybrid", seeds, res.admissions),
        cfg.workers,
        STUDENT_JOB,
        cfg.resume,
    )
    report["reused"]["episodes"] += reused(res.hybrid)
    by_seed = {r.seed: r for r in base}
    hyb = {h.seed: h for h in res.hybrid}
    pairs = [
        (
            by_seed[s].strict_success,
            hyb[s].strict_success if s in hyb else by_seed[s].strict_success,
        )
        for s in cfg.seeds
    ]
    mc = mcnemar([a for a, _ in pairs], [b for _, b in pairs])
    report["hybrid_success"] = asdict(wilson_interval(sum(b for _, b in pairs), len(pairs)))
    report["mcnemar"] = mc.to_dict()
    return res
