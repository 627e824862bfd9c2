"""Issue 35 item 2: RE-0 refine generations of an SFT student arm on its weakest tasks.

Per task, every stage resumable (a finished stage is skipped; ``captain learn re0 --resume``
reuses every finished episode and rollout), running the project's own commands:

1. ``gen1``: ``captain learn re0 --student ARM/student`` on training seeds ``--seeds``: cold and
   refine passes (abstention at rho = 80 %, as the paper), candidate teachers = the clean
   takeover plus ``--candidate`` (default ``harmful``: the faulty takeover, so some audits are
   rejected; the ledger names each audit's teacher), the ledger, the RE-OPD corpus, its
   distillation with the merged SFT student as base, and the child stacked onto the SFT adapter
   (base + one adapter, exported for llama.cpp: ``RE/TASK/g1/child``). Every model episode runs
   on llama.cpp (the SFT folder's exported adapter on the packaged SmolLM2, as it ships).
2. ``control``: the success-filtered unverified corpus of the same size, containing the rejected
   repairs (:func:`captain_ros.research.re0.control.unverified_rows`), distilled from the same
   parent with the same SFT options and stacked the same way (``RE/TASK/unverified/child``).
3. ``gen2``: ``captain learn re0 --student RE/TASK/g1/child --generation 1`` (generation 2
   starts from generation 1's child) -> ``RE/TASK/g2/child``.
4. ``eval``: each child as an arm ``RUN/ARM_re0_TASK_{g1,g2,unverified}`` (``student`` -> the
   child, ``data`` -> the SFT arm's), evaluated by ``exp_student.py --stages export,eval,report
   --split heldout`` exactly as the SFT arm was (llama.cpp on the package, seeds 1500-1549), so
   its episodes pair with ``ARM/eval_heldout`` by seed.
5. ``report``: per task, SFT / gen1 / gen2 / unverified strict success with Wilson intervals,
   exact McNemar of each stage against the previous one (gen1 vs SFT, gen2 vs gen1) and of the
   verified gen1 child against the unverified one; each generation's decision (abstained?),
   verdicts per candidate teacher, corpus rows and the control's composition.
   ``RE/report.json`` and a markdown table on stdout.

``RE`` is ``RUN/ARM_re0``. Run (the lead's command; hours of CPU per task)::

    nice python benchmarks/experiments/exp_re0_student.py --run runs/s17 \\
        --arm six2 --tasks stack,insertion --seeds 0-39 --workers 2

(Episode workers take one thread each by themselves; the distillation's ``learn sft`` then
computes on every core, unless ``OMP_NUM_THREADS`` in the environment says fewer.)

``--dry-run`` prints the commands without running them. Tiny proof (a tiny random SFT student,
the fake rig): tests/re0/test_exp_re0_student.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from exp_rl_student import _episodes, _rate, _strict  # noqa: E402
from exp_student import CAPTAIN, run  # noqa: E402

STAGES = ("gen1", "control", "gen2", "eval", "report")
CHILDREN = ("g1", "g2", "unverified")


def _do(a: argparse.Namespace, cmd: list[str], log: Path) -> None:
    if a.dry_run:
        print("$ " + " ".join(cmd))
        return
    run(cmd, log)


def sft_flags(a: argparse.Namespace) -> dict[str, Any]:
    """The distillation's SFT options (``captain learn re0`` flags and ``DistillConfig.sft``)."""
    return {"max_steps": a.sft_steps, "epochs": a.epochs, "learning_rate": a.lr,
            "grad_accum": a.grad_accum, "bf16": a.bf16}  # fmt: skip


def re0_cmd(a: argparse.Namespace, student: Path, task: str, out: Path, k: int) -> list[str]:
    s = sft_flags(a)
    cmd = [*CAPTAIN, "learn", "re0", "--student", str(student), "--teacher", "scripted",
           "--task", task, "--out", str(out), "--seeds", a.seeds, "--generation", str(k),
           "--workers", str(a.workers), "--backend", a.backend, "--max-draws", str(a.max_draws),
           "--max-new-tokens", str(a.max_new_tokens), "--temperature", str(a.temperature),
           "--max-steps", str(s["max_steps"]), "--epochs", str(s["epochs"]),
           "--grad-accum", str(s["grad_accum"]), "--bf16", s["bf16"]]  # fmt: skip
    for c in a.candidate:
        cmd += ["--candidate", c]
    if a.max_events is not None:
        cmd += ["--max-events", str(a.max_events)]
    if a.lr is not None:
        cmd += ["--lr", str(a.lr)]
    if (out / "ledger.jsonl").exists():
        cmd.append("--resume")
    return cmd + a.re0_args


def generation(a: argparse.Namespace, student: Path, task: str, out: Path, k: int) -> None:
    if (out / "re0.json").is_file():
        return
    _do(a, re0_cmd(a, student, task, out, k), out.with_suffix(".log"))


def child_of(gen: Path) -> Path | None:
    """A finished generation's child (its stacked folder, else the distilled one), or None."""
    try:
        report = json.loads((gen / "re0.json").read_text())
    except (OSError, ValueError):
        return None
    folder = (report.get("child") or {}).get("folder")
    return Path(folder) if folder else None


def control(a: argparse.Namespace, parent: Path, task: str, re: Path) -> None:
    """The unverified control of gen1 (module docstring, stage 2)."""
    from captain_ros.evaluation.runner import parse_seeds
    from captain_ros.research.re0 import read_ledger
    from captain_ros.research.re0.child import CHILD, ship_child, stackable
    from captain_ros.research.re0.control import unverified_rows
    from captain_ros.research.re0.generation import DistillConfig, distill
    from captain_ros.research.re0.loop import LoopConfig
    from captain_ros.research.re0.seats import MODEL_PREFIX, seat_options

    g1, out = re / task / "g1", re / task / "unverified"
    if a.dry_run:
        print(f"# control: unverified_rows({g1}) -> {out}/corpus; distill + stack -> {out}/child")
        return
    if (out / "control.json").is_file():
        return
    report = json.loads((g1 / "re0.json").read_text())
    n_rows = int(report["corpus"]["rows"])
    if not report["distill"].get("ran") or not n_rows:
        why = "gen1 distilled nothing (no verified corpus)"
        out.mkdir(parents=True, exist_ok=True)
        (out / "control.json").write_text(json.dumps({"ran": False, "reason": why}) + "\n")
        return
    cfg = LoopConfig(
        task=task,
        seeds=tuple(report["seeds"]),
        student=MODEL_PREFIX + str(parent.resolve()),
        out=str(out),
        workers=a.workers,
        noise=None,
        backend=a.backend,
        seat_options=seat_options(a.max_new_tokens, a.temperature),
        resume=True,
    )
    entries = list(read_ledger(g1 / "ledger.jsonl"))
    rows, made = unverified_rows(cfg, g1, entries, n_rows, parse_seeds(a.topup_seeds))
    data = out / "corpus"
    data.mkdir(parents=True, exist_ok=True)
    (data / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sft = {k: v for k, v in sft_flags(a).items() if v is not None}
    dcfg = DistillConfig(corpora=("refine",), sft=sft)
    supervised = sum(sum(r["weights"]) for r in rows)
    made["distill"] = distill(cfg, dcfg, data, len(rows), supervised)
    if made["distill"].get("ran"):
        folder = made["distill"]["folder"]
        made["child"] = (
            ship_child(parent, folder, out / CHILD, data)
            if stackable(parent)
            else {"folder": folder}
        )
    (out / "control.json").write_text(json.dumps(made, indent=2, default=str) + "\n")


def child_arm(a: argparse.Namespace, root: Path, task: str, which: str) -> Path:
    return root / f"{a.arm}_re0_{task}_{which}"


def children(re: Path, task: str) -> dict[str, Path | None]:
    ctl = re / task / "unverified" / "control.json"
    try:
        folder = (json.loads(ctl.read_text()).get("child") or {}).get("folder")
    except (OSError, ValueError):
        folder = None
    return {
        "g1": child_of(re / task / "g1"),
        "g2": child_of(re / task / "g2"),
        "unverified": Path(folder) if folder else None,
    }


def evaluate(a: argparse.Namespace, root: Path, arm: Path, re: Path, task: str) -> None:
    for which, child in children(re, task).items():
        if child is None and not a.dry_run:
            continue
        dest = child_arm(a, root, task, which)
        if not a.dry_run:
            dest.mkdir(parents=True, exist_ok=True)
            for name, target in (("student", child), ("data", arm / "data")):
                if not (dest / name).exists():
                    (dest / name).symlink_to(Path(str(target)).resolve())
        cmd = [sys.executable, str(HERE / "exp_student.py"), "--run", str(root),
               "--arm", dest.name, "--tasks", task, "--split", "heldout",
               "--workers", str(a.workers), "--backend", a.backend,
               "--max-new-tokens", str(a.max_new_tokens),
               "--stages", "export,eval,report"]  # fmt: skip
        _do(a, cmd, dest / "exp_student_heldout.log")


def _paired(x: list[Any], y: list[Any]) -> str:
    from captain_ros.evaluation.summary import compare

    if not x or not y:
        return "-"
    c = compare(x, y)
    return f"p = {c['mcnemar']['p_value']:.3g} (n = {c['paired']})"


def _generation_summary(gen: Path) -> dict[str, Any]:
    try:
        r = json.loads((gen / "re0.json").read_text())
    except (OSError, ValueError):
        return {"ran": False}
    refine = r.get("passes", {}).get("refine", {})
    verdicts: dict[str, dict[str, int]] = {}
    for e in refine.get("events", []):
        for x in e.get("audited", []):
            by = verdicts.setdefault(x.get("teacher", r.get("teacher", "")), {})
            by[x["verdict"]] = by.get(x["verdict"], 0) + 1
    return {"ran": True, "abstained": r.get("abstained"), "decision": refine.get("decision"),
            "seat_success": refine.get("seat_success"), "verdicts_by_teacher": verdicts,
            "corpus_rows": r.get("corpus", {}).get("rows"), "child": r.get("child"),
            "seat_engine": r.get("seat_engine")}  # fmt: skip


def report(a: argparse.Namespace, root: Path, arm: Path, re: Path) -> dict[str, Any]:
    split = "eval_heldout"
    res: dict[str, Any] = {"sft_arm": str(arm), "split": split, "tasks": {}}
    lines = ["| task | SFT | gen 1 (p vs SFT) | gen 2 (p vs gen 1) | unverified (p verified vs "
             "unverified) | gen 1 audits by teacher |", "|---|---|---|---|---|---|"]  # fmt: skip
    for task in a.tasks:
        eps = {"sft": _episodes(arm / split / task)}
        for which in CHILDREN:
            eps[which] = _episodes(child_arm(a, root, task, which) / split / task)
        g1 = _generation_summary(re / task / "g1")
        ctl = re / task / "unverified" / "control.json"
        t = {
            "strict": {k: _strict(v) for k, v in eps.items()},
            "gen1_vs_sft": _paired(eps["sft"], eps["g1"]),
            "gen2_vs_gen1": _paired(eps["g1"], eps["g2"]),
            "verified_vs_unverified": _paired(eps["g1"], eps["unverified"]),
            "unverified_vs_sft": _paired(eps["sft"], eps["unverified"]),
            "gen1": g1,
            "gen2": _generation_summary(re / task / "g2"),
            "control": json.loads(ctl.read_text()) if ctl.is_file() else {"ran": False},
        }
        res["tasks"][task] = t
        audits = "; ".join(
            f"{teacher}: {', '.join(f'{n} {v}' for v, n in sorted(vs.items()))}"
            for teacher, vs in (g1.get("verdicts_by_teacher") or {}).items()
        )
        if g1.get("abstained"):
            audits = f"abstained ({g1.get('decision')})"
        s = t["strict"]
        lines.append(
            f"| {task} | {_rate(s['sft'])} | {_rate(s['g1'])} ({t['gen1_vs_sft']}) | "
            f"{_rate(s['g2'])} ({t['gen2_vs_gen1']}) | {_rate(s['unverified'])} "
            f"({t['verified_vs_unverified']}) | {audits or '-'} |"
        )
    if not a.dry_run:
        re.mkdir(parents=True, exist_ok=True)
        (re / "report.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    print("\n".join(lines))
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="the SFT experiment folder")
    ap.add_argument("--arm", required=True, help="the SFT arm under --run (ARM/student, ARM/data)")
    ap.add_argument("--tasks", required=True, help="comma-separated tasks (the two weakest)")
    ap.add_argument("--seeds", default="0-39", help="training seeds of each generation")
    ap.add_argument("--topup-seeds", default="200-299", help="the control's expert top-up seeds")
    ap.add_argument("--candidate", action="append", default=None,
                    help="candidate teacher beside the clean takeover (repeatable; default "
                    "harmful; 'none' for none)")  # fmt: skip
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backend", default="mujoco", choices=("mujoco", "fake"))
    ap.add_argument("--max-draws", type=int, default=48)
    ap.add_argument("--max-events", type=int, default=8,
                    help="failures audited per pass (each costs up to 2 x max-draws rollouts per "
                    "contract and candidate)")  # fmt: skip
    ap.add_argument("--max-new-tokens", type=int, default=160, help="as exp_student evaluates")
    ap.add_argument("--temperature", type=float, default=0.0,
                    help="the student's sampling temperature in RE-0's episodes (exp_student "
                    "evaluates greedily)")  # fmt: skip
    ap.add_argument("--sft-steps", type=int, default=-1, help="distillation steps (-1: --epochs)")
    ap.add_argument("--epochs", type=float, default=1.5)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--grad-accum", type=int, default=4)
    ap.add_argument("--bf16", default="auto", choices=("auto", "on", "off"))
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    ap.add_argument("re0_args", nargs=argparse.REMAINDER, help="-- then extra `learn re0` options")
    a = ap.parse_args(argv)
    a.tasks = [t for t in a.tasks.split(",") if t]
    a.candidate = [c for c in (a.candidate or ["harmful"]) if c != "none"]
    a.re0_args = [x for x in a.re0_args if x != "--"]
    root = Path(a.run)
    arm, re = root / a.arm, root / f"{a.arm}_re0"
    if not (arm / "student" / "adapter").is_dir():
        raise SystemExit(f"{arm}/student has no adapter: not an SFT arm of exp_student.py")
    drafts, dest = arm / "package" / "drafts.txt", arm / "student" / "drafts.txt"
    if drafts.is_file() and not dest.exists() and not a.dry_run:
        shutil.copy(drafts, dest)  # the seat drafts from it on llama.cpp, as the package does
    for stage in a.stages.split(","):
        if stage not in STAGES:
            raise SystemExit(f"unknown stage {stage!r}; valid: {', '.join(STAGES)}")
        for task in a.tasks if stage != "report" else ():
            if stage == "gen1":
                generation(a, arm / "student", task, re / task / "g1", 0)
            elif stage == "control":
                control(a, arm / "student", task, re)
            elif stage == "gen2":
                parent = child_of(re / task / "g1")
                if parent is None and a.dry_run:
                    parent = re / task / "g1" / "child"
                if parent is not None:
                    generation(a, parent, task, re / task / "g2", 1)
            elif stage == "eval":
                evaluate(a, root, arm, re, task)
        if stage == "report":
            report(a, root, arm, re)
    return 0


if __name__ == "__main__":
    sys.exit(main())
