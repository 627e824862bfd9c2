"""RE-OPD with a learned student (issue 14 item 8): one generation on a SmolLM2 student, and the
verified corpus against a success-filtered unverified corpus of the same size.

Stages (each writes under ``--run``; a finished stage is not redone):

1. ``expert``: the scripted expert on ``--expert-seeds`` (training seeds), ``captain learn
   dataset`` (strict successes) and ``captain learn sft --base BASE`` -> the parent student
   (a SmolLM2 student trained on few episodes, so that it fails often enough to audit);
2. ``re0``: ``captain learn re0 --student parent`` on ``--seeds``: cold and refine passes, the
   ledger, the verified corpus, its distillation into ``re0/student`` and the held-out McNemar
   against the parent;
3. ``unverified``: the control corpus of the same number of rows: the trajectories of mu with
   EVERY audited contract admitted (no gate), success-filtered, weight 1 on every turn, topped up
   with the expert's successful episodes on further training seeds; distilled from the same
   parent with the same SFT options -> ``unverified/student``; held-out McNemar against the
   parent and against the verified child (same seeds).

The figures go to ``--run/exp_re0_opd.json``. Held-out seeds are only used in the evaluations.

Full run (CPU, hours; the lead's command): ``nice .venv/bin/python benchmarks/experiments/exp_re0_opd.py
--run runs/exp_re0_opd --task pick_place --expert-seeds 0-3 --seeds 100-139 --heldout 1000-1049
--workers 2 --sft-steps 200 --max-steps 100``. Proof at the tiniest scale (a tiny random base):
``--base DIR --backend fake --expert-seeds 0 --seeds 100-101 --heldout 1000-1001 --sft-steps 1
--max-steps 1 --max-new-tokens 16 --max-requests 20``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from captain_ros.cli.main import main as captain
from captain_ros.evaluation.runner import parse_seeds
from captain_ros.research.re0 import read_ledger
from captain_ros.research.re0.control import unverified_rows as control_rows
from captain_ros.research.re0.generation import heldout_eval
from captain_ros.research.re0.loop import STUDENT_JOB, LoopConfig, seat_jobs
from captain_ros.research.re0.resume import run_jobs
from captain_ros.research.re0.seats import seat_options


def run(cmd: list[str]) -> None:
    print("$ captain " + " ".join(cmd), flush=True)
    if captain(cmd) != 0:
        raise SystemExit(f"stage failed: captain {' '.join(cmd)}")


def sft_args(ns: argparse.Namespace, steps: int) -> list[str]:
    out = ["--max-steps", str(steps), "--grad-accum", str(ns.grad_accum), "--bf16", ns.bf16]
    return out + (["--device", ns.device] if ns.device else [])


def loop_cfg(ns: argparse.Namespace, parent: Path, out: Path, seeds: list[int]) -> LoopConfig:
    options = seat_options(ns.max_new_tokens, ns.temperature, ns.device)  # as captain learn re0
    return LoopConfig(
        task=ns.task,
        seeds=tuple(seeds),
        student=f"model:{parent.resolve()}",
        teacher="takeover",
        out=str(out),
        workers=ns.workers,
        noise=None,
        backend=ns.backend,
        seat_options=options,
        budgets={"max_requests": ns.max_requests} if ns.max_requests else None,
        resume=ns.resume,
    )


def stage_expert(ns: argparse.Namespace, run_dir: Path) -> Path:
    if ns.parent:
        return Path(ns.parent)
    parent = run_dir / "parent"
    if (parent / "config.json").exists():
        return parent
    cfg = loop_cfg(ns, Path("."), run_dir / "expert", parse_seeds(ns.expert_seeds))
    recs = run_jobs(
        seat_jobs(
            LoopConfig(**{**cfg.__dict__, "student": "scripted"}), "scripted", "episodes", cfg.seeds
        ),
        ns.workers,
        STUDENT_JOB,
        ns.resume,
    )
    run(
        [
            "learn",
            "dataset",
            *[r.out_dir for r in recs],
            "--out",
            str(run_dir / "expert" / "data"),
            "--validation-fraction",
            "0",
        ]
    )
    run(
        [
            "learn",
            "sft",
            "--data",
            str(run_dir / "expert" / "data"),
            "--base",
            ns.base,
            "--out",
            str(parent),
            "--val-fraction",
            "0",
            "--no-progress",
            *sft_args(ns, ns.sft_steps),
            *(["--resume"] if (parent / "checkpoints").is_dir() else []),
        ]
    )
    return parent


def stage_re0(ns: argparse.Namespace, run_dir: Path, parent: Path) -> dict[str, Any]:
    out = run_dir / "re0"
    if not (out / "re0.json").exists():
        extra = [
            f"--{k.replace('_', '-')}={v}"
            for k, v in (
                ("max_new_tokens", ns.max_new_tokens),
                ("max_requests", ns.max_requests),
                ("max_events", ns.max_events),
                ("temperature", ns.temperature),
                ("segments", ns.segments),
            )
            if v is not None
        ] + (["--resume"] if ns.resume and (out / "ledger.jsonl").exists() else [])
        run(
            [
                "learn",
                "re0",
                "--student",
                str(parent),
                "--teacher",
                "scripted",
                "--task",
                ns.task,
                "--out",
                str(out),
                "--seeds",
                ns.seeds,
                "--heldout",
                ns.heldout,
                "--workers",
                str(ns.workers),
                "--backend",
                ns.backend,
                "--max-draws",
                str(ns.max_draws),
                *extra,
                *sft_args(ns, ns.max_steps),
            ]
            + (["--deterministic"] if ns.deterministic else [])
        )
    return dict(json.loads((out / "re0.json").read_text()))


def unverified_rows(
    ns: argparse.Namespace, run_dir: Path, parent: Path, n_rows: int
) -> list[dict[str, Any]]:
    """The control corpus (:func:`captain_ros.research.re0.control.unverified_rows`): mu with
    every audited contract admitted ungated, success-filtered, topped up with expert successes
    on further training seeds; weight 1 on every turn; exactly ``n_rows`` (or fewer, reported)."""
    entries = list(read_ledger(run_dir / "re0" / "ledger.jsonl"))
    cfg = loop_cfg(ns, parent, run_dir / "unverified", [])
    rows, _ = control_rows(cfg, run_dir / "re0", entries, n_rows, parse_seeds(ns.topup_seeds))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True)
    p.add_argument("--task", default="pick_place")
    p.add_argument("--base", default="smollm2")
    p.add_argument("--backend", default="mujoco", choices=("mujoco", "fake"))
    p.add_argument("--expert-seeds", default="0-3")
    p.add_argument("--seeds", default="100-139")
    p.add_argument("--topup-seeds", default="200-299")
    p.add_argument("--heldout", default="1000-1049")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--sft-steps", type=int, default=200, help="steps of the parent's SFT")
    p.add_argument("--max-steps", type=int, default=100, help="steps of each distillation")
    p.add_argument("--grad-accum", type=int, default=4)
    p.add_argument("--bf16", default="auto")
    p.add_argument("--device", default=None)
    p.add_argument("--max-new-tokens", type=int, default=None)
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="the student's sampling temperature (0: greedy)",
    )
    p.add_argument("--max-requests", type=int, default=None)
    p.add_argument("--max-draws", type=int, default=48)
    p.add_argument("--deterministic", action="store_true")
    p.add_argument("--max-events", type=int, default=None, help="audits per pass (default: all)")
    p.add_argument(
        "--segments", default=None, help="contract segment lengths (captain learn re0 --segments)"
    )
    p.add_argument(
        "--parent", default="", help="an existing student folder (skips the expert stage)"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run: finished episodes, rollouts and SFT runs are reused",
    )
    ns = p.parse_args(argv)
    run_dir = Path(ns.run)
    run_dir.mkdir(parents=True, exist_ok=True)
    parent = stage_expert(ns, run_dir)
    report = stage_re0(ns, run_dir, parent)
    n_rows = int(report["corpus"]["rows"])
    result: dict[str, Any] = {
        "re0": {k: report.get(k) for k in ("passes", "corpus", "distill", "heldout", "gate")}
    }
    heldout = parse_seeds(ns.heldout)
    if n_rows and report["distill"].get("ran"):
        rows = unverified_rows(ns, run_dir, parent, n_rows)
        data = run_dir / "unverified" / "data"
        data.mkdir(parents=True, exist_ok=True)
        (data / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        child_u = run_dir / "unverified" / "student"
        if not (child_u / "config.json").exists():
            resume_u = ["--resume"] if (child_u / "checkpoints").is_dir() else []
            run(
                [
                    "learn",
                    "sft",
                    "--data",
                    str(data),
                    "--base",
                    str(parent),
                    "--out",
                    str(child_u),
                    "--val-fraction",
                    "0",
                    "--no-progress",
                    *sft_args(ns, ns.max_steps),
                    *resume_u,
                ]
            )
        # the parent's and the verified child's held-out episodes are the re0 stage's (reused)
        cfg = loop_cfg(ns, parent, run_dir / "re0", [])
        cfg = LoopConfig(**{**cfg.__dict__, "resume": True})
        child_v = Path(report["distill"]["folder"])
        folder_u = str((run_dir / "unverified" / "heldout_child").resolve())
        result["unverified"] = {
            "rows": len(rows),
            "wanted_rows": n_rows,
            "vs_parent": heldout_eval(
                cfg,
                f"model:{parent.resolve()}",
                f"model:{child_u.resolve()}",
                heldout,
                ("heldout_parent", folder_u),
            ),
            "verified_vs_unverified": heldout_eval(
                cfg,
                f"model:{child_v.resolve()}",
                f"model:{child_u.resolve()}",
                heldout,
                ("heldout_child", folder_u),
            ),
        }
    else:
        result["unverified"] = {"ran": False, "reason": "no verified corpus was distilled"}
    (run_dir / "exp_re0_opd.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps({k: result[k] for k in ("unverified",)}, indent=2, default=str)[:3000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
