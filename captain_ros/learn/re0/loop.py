"""One RE-0 generation for a task: collect -> locate -> contracts -> verify -> ledger -> mu -> corpus.

:func:`run_generation` is what ``captain learn re0`` runs (``captain_ros/cli/learn_re0.py``):

1. **collect**: the student on the training seeds (deterministic mode), each episode with decision
   points (:func:`~captain_ros.learn.re0.rollouts.student_job` in the evaluation runner's workers);
   a task already at >= rho = 80 % strict success is not refined (abstention, reported);
2. **locate** every failure (:func:`~captain_ros.learn.re0.locate.locate`; abstentions listed);
3. **contracts** of increasing scope per boundary (:func:`contract_ladder`);
4. **verify** in increasing kappa with paired counterfactual rollouts from the restored decision
   point in the stochastic mode (:class:`~captain_ros.learn.re0.rollouts.PairedRunner`), the
   betting gate with the 8..48 escalation and alpha shared over the generation
   (:class:`~captain_ros.learn.re0.allocation.AlphaAllocator`, open-ended series); the smallest
   verified scope is selected; every audited contract goes to ``ledger.jsonl``;
5. **mu**: the student with the admitted segments re-run on the same seeds (J(mu) against J(pi),
   paired McNemar), its trajectories written as RE-OPD rows (``corpus.jsonl``: rendered messages
   and one weight per assistant message: 1 on seat turns, lambda [LCB]+ on admitted repairs);
   an empty admission set closes the gate (reported, no corpus).

Distillation through Learning I's ``captain learn sft`` and the re-evaluation on held-out seeds are
not run here: Learning I is not on this branch, and the testbed students are scripted. The
report (``re0.json``) says which steps ran.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.evaluation.runner import EpisodeJob, run_local
from captain_ros.evaluation.stats import mcnemar, wilson_interval
from captain_ros.harness.context import ContextConfig, render
from captain_ros.harness.decision_points import RecordedEpisode
from captain_ros.learn.re0.allocation import AlphaAllocator
from captain_ros.learn.re0.contracts import RepairContract, scope_cost, select_smallest_verified
from captain_ros.learn.re0.hybrid import Admission
from captain_ros.learn.re0.ledger import LedgerWriter, ledger_entry
from captain_ros.learn.re0.locate import Located, locate
from captain_ros.learn.re0.opd import (
    AdmittedEvent,
    TurnSource,
    gate_state,
    refine_or_abstain,
    reopd_weights,
)
from captain_ros.learn.re0.rollouts import EventSpec, PairedRunner, RolloutError
from captain_ros.learn.re0.verify import Verification, VerifierConfig, invalid_verification, verify

STUDENT_JOB = "captain_ros.learn.re0.rollouts:student_job"
API = ("observe", "segment", "point", "mark_point", "select_detection", "track_target",
       "measure_object_geometry", "measure_image_points", "inspect_contact_geometry",
       "inspect_release_geometry", "compare_object_observations", "get_robot_state", "gripper_state",
       "robot_geometry", "transform_pose", "move_to", "hold", "recover", "release", "check_motion",
       "preview_motion", "read_motion_trajectory", "finish")


@dataclass(frozen=True)
class LoopConfig:
    """One generation's settings (plain data).

    Attributes:
        task / seeds: The task and its training seeds (0-999).
        student / teacher: Seat specs (:func:`~captain_ros.learn.re0.rollouts.make_seats`).
        out: The generation folder.
        workers: Worker processes for episodes and rollouts.
        method / channel: Verifier bound (``betting`` / ``hoeffding``) and return channel.
        noise: The stochastic mode's NoiseSpec dict for verification (None: deterministic).
        segment_lengths: Contract scopes tried, in requests.
        schedule: The escalation levels of M.
        generation: k.
        backend: ``mujoco`` (or ``fake`` with ``noise=None``, for tests).
    """

    task: str
    seeds: tuple[int, ...]
    student: str
    teacher: str = "clean"
    out: str = "runs/re0"
    workers: int = 2
    method: str = "betting"
    channel: str = "success"
    noise: dict[str, Any] | None = field(default_factory=dict)
    segment_lengths: tuple[int, ...] = (1, 2, 4)
    schedule: tuple[int, ...] = (8, 12, 16, 24, 32, 48)
    generation: int = 0
    backend: str = "mujoco"


def contract_ladder(loc: Located, lengths: Sequence[int]) -> list[RepairContract]:
    """Contracts of increasing scope at ``loc``'s boundary: the boundary request's own symbols
    (plus ``finish``) for the shortest segment, the whole API for the longer ones."""
    assert loc.boundary_t is not None
    own = tuple(dict.fromkeys((*loc.capabilities, "finish")))
    out = []
    for i, n in enumerate(sorted(set(lengths))):
        symbols = own if i == 0 else API
        out.append(RepairContract(loc.boundary_t, symbols, n, scope_cost(n, len(symbols))))
    return out


def _jobs(cfg: LoopConfig, folder: str, admissions: Sequence[Admission] = ()) -> list[EpisodeJob]:
    return [EpisodeJob(cfg.task, s, cfg.student, cfg.backend, str(Path(cfg.out) / folder / f"seed_{s:03d}"),
                       {"teacher": cfg.teacher, "admissions": [a.to_dict() for a in admissions
                                                                if a.seed == s]}) for s in cfg.seeds]


def _verify_event(cfg: LoopConfig, event_id: str, source: str, contract: RepairContract, alpha: float,
                  vcfg: VerifierConfig) -> tuple[Verification, PairedRunner]:
    spec = EventSpec(event_id, source, contract.to_dict(), cfg.student, cfg.teacher,
                     str(Path(cfg.out) / "rollouts"), cfg.backend, cfg.noise, cfg.channel)
    runner = PairedRunner(spec, workers=cfg.workers)
    try:
        return verify(runner, alpha, vcfg), runner
    except RolloutError as exc:
        return invalid_verification(str(exc), alpha, vcfg), runner


def corpus_rows(record: Any, folder: str, events: dict[str, AdmittedEvent], task: str, seed: int) -> dict[str, Any]:
    """One RE-OPD row of a hybrid episode (records.md's schema, a whole append-only episode)."""
    rec = RecordedEpisode.load(folder)
    turns = [TurnSource(x["source"], x.get("event_id")) for x in record.extra.get("turns") or []]
    msgs = render(rec.history(), ContextConfig(**rec.start.get("context", {})))
    weights = reopd_weights(turns, events)
    if sum(m.get("role") == "assistant" for m in msgs) != len(weights):
        raise ValueError("the context was compacted: this episode needs one row per segment")
    return {"id": f"{task}:{seed}:0", "episode_id": f"{task}:{seed}", "task": task, "seed": seed,
            "split": "train", "outcome": record.outcome, "profile": "default", "messages": msgs,
            "tools": rec.start.get("tools", []), "weights": weights,
            "requests": list(range(1, len(weights) + 1)),
            "context_sha256": [r.get("context_sha256", "") for r in rec.requests]}


def run_generation(cfg: LoopConfig) -> dict[str, Any]:
    """Run one generation; writes ``ledger.jsonl``, ``corpus.jsonl`` and ``re0.json`` into
    ``cfg.out``; returns the report."""
    from captain_ros.tasks import get_task

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    names = get_task(cfg.task).milestone_names
    base = run_local(_jobs(cfg, "collect"), cfg.workers, STUDENT_JOB)
    wins = [r.strict_success for r in base]
    report: dict[str, Any] = {"task": cfg.task, "seeds": list(cfg.seeds), "student": cfg.student,
                              "teacher": cfg.teacher, "generation": cfg.generation,
                              "student_success": asdict(wilson_interval(sum(wins), len(wins))),
                              "errors": [r.error[-300:] for r in base if r.outcome == "error"]}
    decision = refine_or_abstain(cfg.task, sum(wins) / max(1, len(wins)))
    report["decision"] = decision.reason
    if not decision.refine:
        return _write(out, report)
    vcfg = VerifierConfig(method=cfg.method, return_bound=1.0 if cfg.channel == "success" else 1.75,
                          schedule=cfg.schedule)
    alloc = AlphaAllocator(0.05, planned=None)
    ledger = LedgerWriter(out / "ledger.jsonl")
    entries: list[dict[str, Any]] = []
    admissions: list[Admission] = []
    events_report = []
    for r in base:
        if r.strict_success or r.outcome == "error":
            continue
        rec = RecordedEpisode.load(r.out_dir)
        loc = locate(rec, names)
        item: dict[str, Any] = {"seed": rec.seed, "boundary_t": loc.boundary_t, "reason": loc.reason,
                                "evidence": [e.to_dict() for e in loc.evidence]}
        events_report.append(item)
        if loc.boundary_t is None:
            continue
        history_id = f"{cfg.task}:{rec.seed}:student:t{loc.boundary_t}"
        runners: dict[float, PairedRunner] = {}

        def verify_contract(contract: RepairContract, alpha: float, rec: RecordedEpisode = rec,
                            runners: dict[float, PairedRunner] = runners) -> Verification:
            eid = f"g{cfg.generation}:{cfg.task}:{rec.seed}:t{contract.boundary_t}:L{contract.max_segment_requests}"
            v, runners[contract.kappa] = _verify_event(cfg, eid, str(rec.folder), contract, alpha, vcfg)
            return v

        sel = select_smallest_verified(contract_ladder(loc, cfg.segment_lengths), verify_contract, alloc, history_id)
        for contract, v in sel.audited:
            eid = f"g{cfg.generation}:{cfg.task}:{rec.seed}:t{contract.boundary_t}:L{contract.max_segment_requests}"
            e = ledger_entry(event_id=eid, generation=cfg.generation, history_id=history_id, task=cfg.task,
                             seed=rec.seed, evidence=[x.to_dict() for x in loc.evidence], contract=contract,
                             candidates=[{"id": f"{cfg.teacher}@t{contract.boundary_t}",
                                          "code_sha256": ",".join(runners[contract.kappa].candidate_codes())}],
                             verification=v, return_bound=vcfg.return_bound)
            ledger.append(e)
            entries.append(e)
            if v.admitted:
                sha = str(rec.requests[contract.boundary_t - 1].get("context_sha256", ""))
                admissions.append(Admission(eid, cfg.task, rec.seed, contract.boundary_t, sha, contract))
        item["audited"] = [{"kappa": c.kappa, "verdict": v.verdict, "delta_hat": v.delta_hat, "lcb": v.lcb,
                            "rollouts": v.rollouts_spent, "valid_reason": v.valid_reason} for c, v in sel.audited]
    report["events"] = events_report
    gate = gate_state(entries)
    report["gate"] = gate.reason
    report["rollouts_spent"] = sum(int(e["rollouts_spent"]) for e in entries)
    if not gate.open:
        return _write(out, report)
    hybrid = run_local(_jobs(cfg, "hybrid", admissions), cfg.workers, STUDENT_JOB)
    by_seed = {r.seed: r for r in base}
    pairs = [(by_seed[h.seed].strict_success, h.strict_success) for h in hybrid]
    mc = mcnemar([a for a, _ in pairs], [b for _, b in pairs])
    report["hybrid_success"] = asdict(wilson_interval(sum(b for _, b in pairs), len(pairs)))
    report["mcnemar"] = mc.to_dict()
    events = {e["event_id"]: AdmittedEvent.from_ledger(e) for e in entries}
    with (out / "corpus.jsonl").open("w") as f:
        for h in hybrid:
            if h.outcome != "error" and any(x.get("source") == "repair" for x in h.extra.get("turns") or []):
                try:
                    f.write(json.dumps(corpus_rows(h, h.out_dir, events, cfg.task, h.seed)) + "\n")
                except ValueError as exc:
                    report.setdefault("corpus_skipped", []).append(f"seed {h.seed}: {exc}")
    report["distill"] = "not run: Learning I's `captain learn sft` is not on this branch"
    return _write(out, report)


def _write(out: Path, report: dict[str, Any]) -> dict[str, Any]:
    (out / "re0.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return report
