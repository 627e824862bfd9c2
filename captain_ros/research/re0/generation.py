"""One RE-0 generation for a task, from one command: passes -> corpus -> distill -> re-evaluate.

:func:`run_loop` is what ``captain learn re0`` runs (``captain_ros/research/re0/cli.py``):

1. the **cold** pass (RE-OPD-cold, when asked): the teacher in the seat (``scripted``), its own
   failures located, repaired by its takeover and verified; no rho abstention (the teacher is not
   the target);
2. the **refine** pass (RE-OPD-refine): the student in the seat; a task already at >= 80 % is not
   refined (reported); an empty admission set closes its gate (reported);
   both passes share one alpha allocator and one ``ledger.jsonl`` (:func:`~.loop.run_pass`);
3. **corpus** ``corpus/corpus.jsonl``: SFT rows with RE-OPD weights (:mod:`.corpus`): cold keeps
   the verified-completed trajectories, refine the trajectories mu ran through an admitted repair;
4. **distill** through Learning I's SFT (:func:`captain_ros.learn.sft.run_sft`) with the student
   folder as the base, into ``student/``: only for a learned student with weights (a scripted
   student or a packaged one has none: the report says so) and only with supervised rows (else:
   why not); a parent with a LoRA adapter gets its child stacked onto it as base + one adapter
   in ``child/`` and, where the parent ships as an adapter GGUF, exported for llama.cpp
   (:mod:`.child`): the next generation's ``--student``;
5. **re-evaluate** the child against its parent on held-out seeds (1000-1999),
   deterministic, paired exact McNemar and Wilson intervals.

``re0.json`` holds the report of every step, including the ones that did not run and why.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.evaluation.stats import mcnemar, wilson_interval
from captain_ros.learn.data.sources import read_folder
from captain_ros.research.re0.allocation import AlphaAllocator
from captain_ros.research.re0.child import CHILD, ship_child, stackable
from captain_ros.research.re0.corpus import CORPORA, keep_row, trajectory_rows, turn_sources
from captain_ros.research.re0.ledger import LedgerWriter
from captain_ros.research.re0.loop import STUDENT_JOB, LoopConfig, PassResult, run_pass, seat_jobs
from captain_ros.research.re0.opd import DEFAULT_LAMBDA, AdmittedEvent
from captain_ros.research.re0.resume import reused, run_jobs
from captain_ros.research.re0.seats import MODEL_PREFIX, seat_engine

TEACHER_SEAT = "scripted"
"""The seat of the cold pass: the teacher itself (its repairs are its own takeovers)."""
DISTILL_RECORD = "re0_distill.json"
"""What a finished distillation was of (corpus hash, SFT options) and its metrics: a resume
reuses ``student/`` only when both match."""


@dataclass(frozen=True)
class DistillConfig:
    """The corpus, distillation and re-evaluation settings of a generation.

    Attributes:
        corpora: Which passes run and feed the corpus (``cold``, ``refine``).
        lam / retention: RE-OPD's lambda and the seat turns' retention weight.
        heldout: Held-out seeds (1000-1999) of the re-evaluation; empty: not run.
        sft: ``SftOptions`` fields for ``run_sft`` (``data``/``base``/``out`` are set here).
    """

    corpora: tuple[str, ...] = ("cold", "refine")
    lam: float = DEFAULT_LAMBDA
    retention: float = 1.0
    heldout: tuple[int, ...] = ()
    sft: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = [c for c in self.corpora if c not in CORPORA]
        if bad or not self.corpora:
            raise ValueError(f"corpora must be some of {', '.join(CORPORA)}, got {self.corpora}")
        if any(not 1000 <= s <= 1999 for s in self.heldout):
            raise ValueError("held-out seeds are 1000-1999")


def is_model(seat: str) -> bool:
    return seat.startswith(MODEL_PREFIX)


def corpus_rows(
    res: PassResult,
    corpus: str,
    events: dict[str, AdmittedEvent],
    dcfg: DistillConfig,
    skipped: list[str],
) -> list[dict[str, Any]]:
    """The rows ``corpus`` keeps from one pass (the seat's own episodes and mu's)."""
    hybrid_seeds = {h.seed for h in res.hybrid}
    records = [r for r in res.base if r.seed not in hybrid_seeds] + list(res.hybrid)
    rows: list[dict[str, Any]] = []
    for r in sorted(records, key=lambda x: x.seed):
        if r.outcome == "error":
            continue
        try:
            n = len(read_folder(Path(r.out_dir)).requests)
        except (ValueError, OSError) as exc:
            skipped.append(f"{corpus} seed {r.seed}: {exc}")
            continue
        sources = turn_sources(r.extra.get("turns") or [], n)
        if not keep_row(corpus, bool(r.strict_success), sources, events):
            continue
        try:
            rows += trajectory_rows(r.out_dir, sources, events, corpus, dcfg.lam, dcfg.retention)
        except (ValueError, OSError) as exc:  # a DatasetError is a ValueError
            skipped.append(f"{corpus} seed {r.seed}: {exc}")
    return rows


def heldout_eval(
    cfg: LoopConfig,
    parent: str,
    child: str,
    seeds: Sequence[int],
    folders: tuple[str, str] = ("heldout_parent", "heldout_child"),
) -> dict[str, Any]:
    """Parent and child on the same held-out seeds, deterministic: Wilson intervals and McNemar.
    ``folders``: where each side's episodes go, under ``cfg.out`` (or absolute: with ``resume``,
    a side already evaluated in another generation's folder is read back, not rerun)."""
    ecfg = replace(cfg, noise=None)
    a = run_jobs(seat_jobs(ecfg, parent, folders[0], seeds), cfg.workers, STUDENT_JOB, cfg.resume)
    b = run_jobs(seat_jobs(ecfg, child, folders[1], seeds), cfg.workers, STUDENT_JOB, cfg.resume)
    pa = {r.seed: r.strict_success for r in a}
    pb = {r.seed: r.strict_success for r in b}
    xs, ys = [pa[s] for s in seeds], [pb[s] for s in seeds]
    return {
        "seeds": list(seeds),
        "parent": asdict(wilson_interval(sum(xs), len(xs))),
        "child": asdict(wilson_interval(sum(ys), len(ys))),
        "mcnemar": mcnemar(xs, ys).to_dict(),
        "errors": [r.error[-300:] for r in a + b if r.outcome == "error"],
        "reused": reused(a + b),
    }


def distill(
    cfg: LoopConfig, dcfg: DistillConfig, data: Path, n_rows: int, supervised: float
) -> dict[str, Any]:
    """``run_sft`` on the corpus with the student folder as the base (or why it did not run)."""
    if not is_model(cfg.student):
        return {
            "ran": False,
            "reason": f"does not apply: the student {cfg.student!r} is scripted "
            "(no weights to distill into)",
        }
    if n_rows == 0 or supervised <= 0:
        return {
            "ran": False,
            "reason": "no supervised rows (empty corpus: the gates closed or no "
            "verified-completed trajectory)",
        }
    base = Path(cfg.student[len(MODEL_PREFIX) :])
    if not (base / "config.json").is_file():
        return {
            "ran": False,
            "reason": f"the student {base} holds no transformers weights (a packaged student: "
            "base GGUF + adapter); give its `captain learn sft` folder as --student to distill",
        }
    from captain_ros.learn.sft import SftOptions, run_sft

    out = Path(cfg.out) / "student"
    opts = SftOptions(
        **{
            "val_fraction": 0.0,
            "progress": False,
            **dcfg.sft,
            "data": str(data),
            "base": cfg.student[len(MODEL_PREFIX) :],
            "out": str(out),
        }
    )
    done = out / DISTILL_RECORD
    what = json.loads(
        json.dumps(
            {
                "corpus_sha256": hashlib.sha256((data / "corpus.jsonl").read_bytes()).hexdigest(),
                "options": asdict(opts),  # resume=False here: a resumed run is the same run
            },
            default=str,
        )
    )
    if cfg.resume:
        try:
            stored = json.loads(done.read_text())
        except (OSError, ValueError):
            stored = {}
        if {k: stored.get(k) for k in what} == what and (out / "config.json").exists():
            return {"ran": True, "reused": True, "folder": str(out), **stored}
        if (out / "checkpoints").is_dir():  # an interrupted distillation of this corpus
            opts = replace(opts, resume=True)  # run_sft refuses other data or options
    metrics = run_sft(opts)
    done.write_text(json.dumps({**what, "metrics": metrics}, default=str) + "\n")
    return {"ran": True, "folder": str(out), "metrics": metrics, "options": asdict(opts)}


def run_loop(cfg: LoopConfig, dcfg: DistillConfig) -> dict[str, Any]:
    """Run the whole generation (module docstring); writes ``ledger.jsonl``, ``corpus/``,
    ``student/`` and ``re0.json`` into ``cfg.out``; returns the report."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "task": cfg.task,
        "seeds": list(cfg.seeds),
        "student": cfg.student,
        "teacher": cfg.teacher,
        "generation": cfg.generation,
        "corpora": list(dcfg.corpora),
        "lambda": dcfg.lam,
        "retention": dcfg.retention,
        "candidates": list(cfg.candidates),
    }
    if is_model(cfg.student):
        report["seat_engine"] = seat_engine(
            cfg.student[len(MODEL_PREFIX) :],
            cfg.seat_options.get("engine"),
            cfg.seat_options.get("device"),
        )
    alloc = AlphaAllocator(0.05, planned=None)
    path = out / "ledger.jsonl"
    if path.exists() and path.stat().st_size and not cfg.resume:
        raise InvalidArgumentError(
            f"{out} already holds a generation's ledger: pass --resume to continue it "
            "(finished episodes and rollouts are reused, the ledger is rebuilt) or choose "
            "another --out"
        )
    path.write_text("")  # zero audited events is a result too: an empty ledger
    ledger = LedgerWriter(path)
    passes: dict[str, PassResult] = {}
    if "cold" in dcfg.corpora:
        passes["cold"] = run_pass(cfg, TEACHER_SEAT, "cold", alloc, ledger, abstain=False)
    passes["refine"] = run_pass(cfg, cfg.student, "refine", alloc, ledger, abstain=True)
    report["passes"] = {k: v.report for k, v in passes.items()}
    report["abstained"] = bool(passes["refine"].report.get("abstained"))
    report["gate"] = {k: v.report.get("gate", "not reached (abstained)") for k, v in passes.items()}
    events = {
        e["event_id"]: AdmittedEvent.from_ledger(e) for v in passes.values() for e in v.entries
    }
    skipped: list[str] = []
    rows = [
        row
        for name, res in passes.items()
        if name in dcfg.corpora
        for row in corpus_rows(res, name, events, dcfg, skipped)
    ]
    data = out / "corpus"
    data.mkdir(exist_ok=True)
    (data / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    supervised = sum(sum(r["weights"]) for r in rows)
    report["corpus"] = {
        "rows": len(rows),
        "by_corpus": {c: sum(r["corpus"] == c for r in rows) for c in CORPORA},
        "weight_sum": supervised,
        "skipped": skipped,
        "path": str(data / "corpus.jsonl"),
    }
    report["distill"] = distill(cfg, dcfg, data, len(rows), supervised)
    child = ""
    if report["distill"]["ran"]:
        child = report["distill"]["folder"]
        parent = cfg.student[len(MODEL_PREFIX) :]
        if stackable(parent):  # base + one adapter, exported where the parent ships
            report["child"] = ship_child(parent, child, out / CHILD, data)
            child = report["child"]["folder"]
        else:
            report["child"] = {"folder": child, "stacked_rank": None, "exported": False}
        report["child"]["engine"] = seat_engine(child, cfg.seat_options.get("engine"))
    if not child:
        report["heldout"] = {"ran": False, "reason": "no distilled student"}
    elif not dcfg.heldout:
        report["heldout"] = {"ran": False, "reason": "no held-out seeds given"}
    else:
        report["heldout"] = {
            "ran": True,
            **heldout_eval(cfg, cfg.student, MODEL_PREFIX + child, dcfg.heldout),
        }
    return write_report(out, report)


def write_report(out: Path, report: dict[str, Any]) -> dict[str, Any]:
    (out / "re0.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return report
