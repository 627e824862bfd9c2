"""The unverified control of a generation: the same repairs without the gate, success-filtered.

RE-0 claims that the *composition* of the verified corpus matters: what the gate admits, not only
how many successful trajectories there are. The control tests that claim with a corpus of the
same size built the way a success filter would build it:

1. every contract the refine pass audited (``ledger.jsonl``), admitted **without** the gate: for
   each failure and each candidate teacher, its widest audited scope, rejected and insufficient
   ones included (with a sometimes-harmful candidate beside the clean takeover, these are the
   rejected repairs);
2. mu re-run with each such admission (one episode per failure and candidate, the candidate's
   own teacher writing the segment);
3. success filter: the successful trajectories are kept, every turn at weight 1 (no [LCB]+);
4. topped up with the scripted expert's successes on further training seeds when the repairs
   give fewer rows than the verified corpus has, and cut to exactly that many rows.

:func:`unverified_rows` returns the rows and what they are made of (how many rows hold a repair
the gate admitted, rejected or found insufficient, how many are expert top-ups), so a report can
say whether the control really contained rejected repairs. Used by
``benchmarks/experiments/exp_re0_opd.py`` and ``exp_re0_student.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.research.re0.contracts import RepairContract
from captain_ros.research.re0.corpus import trajectory_rows, turn_sources
from captain_ros.research.re0.hybrid import Admission
from captain_ros.research.re0.loop import STUDENT_JOB, LoopConfig, seat_jobs
from captain_ros.research.re0.opd import AdmittedEvent
from captain_ros.research.re0.resume import run_jobs


def teacher_of(entry: dict[str, Any]) -> str:
    """The candidate teacher a ledger entry audited (``candidates[0].id`` is ``TEACHER@tN``)."""
    return str(entry["candidates"][0]["id"]).rsplit("@t", 1)[0]


def ungated_admissions(
    generation: Path, task: str, entries: Iterable[dict[str, Any]]
) -> list[tuple[Admission, str]]:
    """Per refine failure and candidate teacher, its widest audited contract as an admission
    (no gate), with the verdict the gate gave it; ordered by seed, then candidate."""
    widest: dict[tuple[int, str], dict[str, Any]] = {}
    for e in entries:
        if ":refine:" not in e["event_id"]:
            continue
        key = (int(e["seed"]), teacher_of(e))
        if key not in widest or e["contract"]["kappa"] >= widest[key]["contract"]["kappa"]:
            widest[key] = e
    out: list[tuple[Admission, str]] = []
    for (seed, teacher), e in sorted(widest.items(), key=lambda kv: (kv[0][0], kv[1]["event_id"])):
        c = e["contract"]
        folder = generation / "refine_collect" / f"seed_{seed:04d}"
        requests = EpisodeFiles(folder).read_trajectory_split().requests
        contract = RepairContract(
            int(c["boundary_t"]),
            tuple(c["allowed_symbols"]),
            int(c["max_segment_requests"]),
            float(c["kappa"]),
        )
        sha = str(requests[contract.boundary_t - 1]["context_sha256"])
        adm = Admission(e["event_id"], task, seed, contract.boundary_t, sha, contract, teacher)
        out.append((adm, str(e["verdict"])))
    return out


def _rows_of(record: Any, events: dict[str, AdmittedEvent]) -> list[dict[str, Any]]:
    n = len(EpisodeFiles(Path(record.out_dir)).read_trajectory_split().requests)
    sources = turn_sources(record.extra.get("turns") or [], n)
    return trajectory_rows(record.out_dir, sources, events, "unverified")


def unverified_rows(
    cfg: LoopConfig,
    generation: Path,
    entries: Sequence[dict[str, Any]],
    n_rows: int,
    topup_seeds: Sequence[int] = (),
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Exactly ``n_rows`` control rows (fewer, reported, when even the top-up runs short) and
    their composition. ``cfg``: the control's settings (``student`` the parent's seat, ``out``
    the control's folder: ``mu_ungated*/`` and ``expert_topup/`` go there); ``generation``: the
    verified generation's folder (its ``refine_collect`` episodes); ``entries``: its ledger."""
    pairs = ungated_admissions(generation, cfg.task, entries)
    if pairs:  # mu under the generation's own budgets (TASK.md renders them: the admitted
        # histories' hashes hold only then)
        first = generation / "refine_collect" / f"seed_{pairs[0][0].seed:04d}"
        start = EpisodeFiles(first).read_trajectory_split().start or {}
        if start.get("budgets"):
            cfg = replace(cfg, budgets=dict(start["budgets"]))
    events = {a.event_id: AdmittedEvent(a.event_id, lcb=1.0, admitted=True) for a, _ in pairs}
    verdict_of = {a.event_id: v for a, v in pairs}
    rows: list[dict[str, Any]] = []
    holds: Counter[str] = Counter()
    teachers = list(dict.fromkeys(a.teacher for a, _ in pairs))
    for k, teacher in enumerate(teachers):  # one mu episode per failure and candidate
        adms = [a for a, _ in pairs if a.teacher == teacher]
        folder = "mu_ungated" if k == 0 else f"mu_ungated_c{k}"
        seeds = [a.seed for a in adms]
        for r in run_jobs(
            seat_jobs(cfg, cfg.student, folder, seeds, adms), cfg.workers, STUDENT_JOB, cfg.resume
        ):
            if not r.strict_success or len(rows) >= n_rows:
                continue
            new = _rows_of(r, events)
            for row in new:
                ids = {s.split(":", 1)[1] for s in row["turn_sources"] if s.startswith("repair:")}
                for v in {verdict_of[i] for i in ids}:
                    holds[v] += 1
            rows += new
    expert = 0
    k = 0
    while len(rows) < n_rows and k < len(topup_seeds):
        seeds = list(topup_seeds[k : k + max(1, cfg.workers)])
        k += len(seeds)
        tcfg = replace(cfg, seeds=tuple(seeds))  # the expert in the parent's prompt profile
        for r in run_jobs(
            seat_jobs(tcfg, "scripted", "expert_topup", seeds), cfg.workers, STUDENT_JOB, cfg.resume
        ):
            if r.strict_success and len(rows) < n_rows:
                new = _rows_of(r, {})
                expert += len(new)
                rows += new
    for row in rows:
        row["weights"] = [1.0 if t > 0 else 0.0 for t in row["requests"]]  # unverified: no [LCB]+
    rows = rows[:n_rows]
    report = {
        "rows": len(rows),
        "wanted_rows": n_rows,
        "ungated_repairs": {v: n for v, n in Counter(v for _, v in pairs).items()},
        "rows_holding_a_repair_by_verdict": dict(holds),
        "expert_topup_rows": expert,
    }
    return rows, report
