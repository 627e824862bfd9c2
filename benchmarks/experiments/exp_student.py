"""Issue 30's experiment: the six-task student on the `student` profile, resumable stage by stage.

Every stage runs the real command a user runs and is skipped when its output exists, so a run cut
by the end of a session continues where it stopped (``--stages`` picks some):

1. ``collect``: the scripted expert on train seeds (``--train-seeds``, default 0-119) of each task,
   one ``captain eval --policy scripted --profile student`` folder per 20-seed chunk;
2. ``dataset``: ``captain learn dataset`` over the arm's tasks (strict successes only, the first
   ``--per-task`` episodes of each task, ``--finish-weight``, ``--branch-weight``, ``--val-fraction`` for validation);
3. ``sft``: ``captain learn sft --epochs E --threads CORES`` (``--resume`` when checkpoints exist;
   every core, whatever ``OMP_NUM_THREADS`` the evaluation stages run with; ``--sft-procs P``: P
   data-parallel processes under ``torchrun``);
4. ``export``: ``captain learn export --adapter`` (the LoRA adapter as a llama.cpp GGUF, checked
   against transformers) and ``ARM/package/``, the student as it ships (``student.json`` and the
   adapter: what ``scripts/ship_student.py`` copies into ``captain_ros/data/students/``);
5. ``eval``: ``captain eval --policy transformers --model-folder ARM/package`` (llama.cpp: the
   packaged SmolLM2 plus the adapter, exactly what ships) on ``--split`` seeds:
   ``dev`` (train-range seeds 900-919, never in the data) while developing, ``heldout`` (seeds
   1500-1549 of each task, used once, for the figures);
6. ``report``: strict and host success with Wilson intervals, false finishes, and failures counted
   by their first off-plan request (the first request whose code differs from the expert's, which
   writes the same calls on every seed of a task on its path; string literals aside, since some
   name the episode's object, e.g. two_arm_lift's box colour).

An *arm* is one student: ``--arm NAME --tasks T1,T2`` (one task: a per-task adapter; several: a
multi-task adapter). Run: ``.venv/bin/python benchmarks/experiments/exp_student.py --run runs/student
--arm pick_place --tasks pick_place [--stages ...] [--split dev] [--workers 1] [-- sft options]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from captain_ros.learn.data.branches import code_shape
from captain_ros.learn.data.branches import request_code as _code
from captain_ros.policy.students import EVAL_DECODING  # how a shipped student then decodes

CAPTAIN = [sys.executable, "-m", "captain_ros.cli.main"]
STAGES = ("collect", "dataset", "sft", "export", "eval", "report")
TASKS = ("pick_place", "stack", "restack", "open_drawer", "two_arm_lift", "insertion")
SPLITS = {"dev": (900, 920), "heldout": (1500, 1550)}
# robosuite's student is evaluated on the seeds its expert was (results/robosuite.md: 1000-1049),
# so the two pair by seed; no student was ever evaluated on them
BACKEND_SPLITS = {"robosuite": {"heldout": (1000, 1050)}}


def split_seeds(backend: str, split: str) -> tuple[int, int]:
    """[first, end) of ``split``'s seeds on ``backend``."""
    return BACKEND_SPLITS.get(backend, {}).get(split, SPLITS[split])


CHUNK = 20


def run(cmd: list[str], log: Path | None = None) -> float:
    print("$ " + shlex.join(cmd), flush=True)
    t = time.perf_counter()
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") if log else open("/dev/null", "w") as fh:
        proc = subprocess.run(
            cmd, check=False, stdout=fh if log else None, stderr=subprocess.STDOUT
        )
    if proc.returncode != 0:
        raise SystemExit(
            f"failed ({proc.returncode}): {shlex.join(cmd)}" + (f" (log {log})" if log else "")
        )
    return time.perf_counter() - t


def chunks(first: int, end: int) -> list[tuple[int, int]]:
    return [(a, min(a + CHUNK, end) - 1) for a in range(first, end, CHUNK)]


def eval_chunks(
    task: str,
    first: int,
    end: int,
    folder: Path,
    workers: int,
    policy: list[str],
    backend: str = "mujoco",
) -> None:
    """``captain eval`` of ``policy`` on seeds ``first..end-1`` of ``task``, one folder per chunk
    under ``folder`` (a chunk whose ``eval.json`` exists is done)."""
    for lo, hi in chunks(first, end):
        out = folder / f"{lo}-{hi}"
        if (out / "eval.json").exists():
            continue
        cmd = [*CAPTAIN, "eval", "--backend", backend, "--task", task, "--seeds", f"{lo}-{hi}",
               *policy,
               "--profile", "student", "--no-bag", "--workers", str(workers), "--overwrite",
               "--out", str(out)]  # fmt: skip
        run(cmd, out.with_suffix(".log"))


def collect(a: argparse.Namespace, root: Path) -> None:
    first, end = (int(x) for x in a.train_seeds.split("-"))
    for task in a.tasks:
        eval_chunks(
            task,
            first,
            end + 1,
            root / "expert" / task,
            a.workers,
            ["--policy", "scripted"],
            a.backend,
        )


def expert_episodes(root: Path, task: str) -> list[Path]:
    """The expert's strict successes of ``task``, in seed order."""
    from captain_ros.evaluation.summary import load_episodes

    eps = []
    for folder in sorted((root / "expert" / task).glob("*-*/")):
        if (folder / "eval.json").exists():
            eps += [e for e in load_episodes(folder) if e.strict_success]
    return [Path(e.out_dir) for e in sorted(eps, key=lambda e: e.seed)]


def dataset(a: argparse.Namespace, root: Path, arm: Path) -> None:
    inputs: list[str] = []
    for task in a.tasks:
        eps = expert_episodes(root, task)
        if len(eps) < a.per_task:
            raise SystemExit(
                f"{task}: {len(eps)} expert successes, fewer than --per-task {a.per_task}"
            )
        inputs += [str(p) for p in eps[: a.per_task]]
    run(
        [
            *CAPTAIN,
            "learn",
            "dataset",
            *inputs,
            "--out",
            str(arm / "data"),
            "--outcomes",
            "strict",
            "--finish-weight",
            str(a.finish_weight),
            "--branch-weight",
            str(a.branch_weight),
            "--validation-fraction",
            str(a.val_fraction),
        ],
        arm / "dataset.log",
    )


def add_eval_temperature(ap: argparse.ArgumentParser, flag: str) -> None:
    """The evaluation's temperature option (default: the shipped student's decoding, greedy)."""
    ap.add_argument(
        flag,
        type=float,
        default=float(EVAL_DECODING["temperature"]),
        help="evaluation temperature (default: the shipped student's, greedy); a sampled "
        "evaluation is kept in ARM/eval_SPLIT_tT",
    )


def eval_dir(arm: Path, split: str, temperature: float) -> Path:
    """``ARM/eval_SPLIT`` for the shipped decoding (greedy); a sampled evaluation keeps its own
    folder, ``ARM/eval_SPLIT_tT`` (e.g. ``eval_dev_t1``), so the two never mix in one report."""
    if float(temperature) == float(EVAL_DECODING["temperature"]):
        return arm / f"eval_{split}"
    return arm / f"eval_{split}_t{float(temperature):g}"


def sft_command(a: argparse.Namespace, arm: Path, cores: int | None = None) -> list[str]:
    """``captain learn sft`` for the arm: every core, ``--resume`` when checkpoints exist; with
    ``--sft-procs P`` > 1 under ``torchrun`` (gloo), P processes of cores / P threads each (a step
    then holds P x ``--grad-accum`` sequences: pass ``--grad-accum`` divided by P to keep the
    single-process step; measured 1.12x on the 2-core EPYC, benchmarks/results/sft.md)."""
    cores = cores or os.cpu_count() or 1
    procs = max(1, int(a.sft_procs))
    resume = ["--resume"] if any((arm / "student" / "checkpoints").glob("checkpoint-*")) else []
    args = ["learn", "sft", "--data", str(arm / "data"), "--out", str(arm / "student"),
            "--epochs", str(a.epochs), "--no-progress", "--threads", str(max(1, cores // procs)),
            *resume, *a.sft_args]  # fmt: skip
    if procs == 1:
        return [*CAPTAIN, *args]
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    return [*launch, "--nproc_per_node", str(procs), "-m", CAPTAIN[-1], *args]


def evaluate(a: argparse.Namespace, arm: Path) -> None:
    lo, end = split_seeds(a.backend, a.split)
    policy = ["--policy", "transformers", "--model-folder", str(arm / "package"),
              "--engine", "llamacpp", "--max-new-tokens", str(a.max_new_tokens),
              "--temperature", str(a.temperature)]  # fmt: skip
    for task in a.tasks:
        folder = eval_dir(arm, a.split, a.temperature) / task
        eval_chunks(task, lo, end, folder, a.workers, policy, a.backend)


def package(arm: Path) -> None:
    """``ARM/package/``: the adapter GGUF, the draft corpus and ``student.json``, as the student
    ships."""
    from captain_ros.policy.students import DRAFTS, write_drafts

    student = arm / "student"
    export = student / "export.json"
    if not (export.is_file() and json.loads(export.read_text()).get("adapter")):
        run(
            [*CAPTAIN, "learn", "export", str(student), "--adapter", "--data", str(arm / "data")],
            arm / "export.log",
        )
    rec = json.loads(export.read_text())["adapter"]
    stats = json.loads((arm / "data" / "stats.json").read_text())
    dest = arm / "package"
    dest.mkdir(exist_ok=True)
    shutil.copy(student / rec["gguf"], dest / rec["gguf"])
    with open(arm / "data" / "train.jsonl") as fh:
        write_drafts((json.loads(line) for line in fh if line.strip()), dest / DRAFTS)
    (dest / "student.json").write_text(
        json.dumps(
            {
                "base": rec["base"],
                "base_gguf": rec["base_gguf"],
                "base_sha256": rec["base_sha256"],
                "adapter": rec["gguf"],
                "drafts": DRAFTS,
                "profile": rec["profile"],
                "tasks": sorted(stats["tokens"]["per_task"]),
            },
            indent=2,
        )
        + "\n"
    )


def expert_plan(root: Path, task: str) -> list[str]:
    """The code the expert writes, request by request, on most seeds of ``task``."""
    from captain_ros.harness.record.recorded import RecordedEpisode

    plans = Counter()
    for ep in expert_episodes(root, task)[:20]:
        plans[tuple(_code(r) for r in RecordedEpisode.load(ep).requests)] += 1
    return list(plans.most_common(1)[0][0]) if plans else []


def first_off_plan(episode_dir: Path, plan: list[str]) -> int | None:
    """1-based index of the first request whose code differs from ``plan``, string literals aside
    (None: on plan)."""
    from captain_ros.harness.record.recorded import RecordedEpisode

    requests = RecordedEpisode.load(episode_dir).requests
    for i, r in enumerate(requests):
        if i >= len(plan) or code_shape(_code(r)) != code_shape(plan[i]):
            return i + 1
    return None if len(requests) == len(plan) else len(requests) + 1


def report(a: argparse.Namespace, root: Path, arm: Path) -> dict[str, Any]:
    from captain_ros.evaluation.summary import aggregate, load_episodes

    res: dict[str, Any] = {
        "arm": a.arm,
        "split": a.split,
        "temperature": a.temperature,
        "tasks": {},
    }
    lines = [
        "| task | strict (95% Wilson) | host | false finishes | failures by first off-plan "
        "request | model s / episode (median) | wall s / episode (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    all_eps = []
    for task in a.tasks:
        eps = [
            e
            for f in sorted((eval_dir(arm, a.split, a.temperature) / task).glob("*-*/"))
            if (f / "eval.json").exists()
            for e in load_episodes(f)
        ]
        if not eps:
            continue
        all_eps += eps
        plan = expert_plan(root, task)
        off = Counter(first_off_plan(Path(e.out_dir), plan) for e in eps if not e.strict_success)
        agg = aggregate(eps)
        res["tasks"][task] = {
            **agg,
            "failures_by_first_off_plan_request": dict(off),
            "seeds": sorted(e.seed for e in eps),
        }
        s, h = agg["strict_success"], agg["host_success"]
        model = sorted(e.model_s for e in eps)[len(eps) // 2]
        lines.append(
            f"| {task} | {s['successes']}/{s['n']} = {s['rate']:.0%} [{s['ci_low']:.0%}, "
            f"{s['ci_high']:.0%}] | {h['successes']}/{h['n']} | "
            f"{agg['false_finish']['successes']} | "
            f"{', '.join(f'r{k}: {v}' for k, v in sorted(off.items(), key=str)) or '-'} | "
            f"{model:.1f} | {agg['wall_s_per_episode']['median']:.1f} |"
        )
    if len(res["tasks"]) > 1:
        rates = [t["strict_success"]["rate"] for t in res["tasks"].values()]
        res["task_average_strict"] = sum(rates) / len(rates)
        lines.append(
            f"\nTask-averaged strict success: {res['task_average_strict']:.1%} over "
            f"{len(rates)} tasks ({len(all_eps)} episodes)."
        )
    sft = arm / "student" / "metrics.json"
    if sft.exists():
        res["sft"] = json.loads(sft.read_text())
    name = eval_dir(arm, a.split, a.temperature).name.replace("eval_", "report_", 1)
    (arm / f"{name}.json").write_text(json.dumps(res, indent=2, default=str))
    print("\n".join(lines))
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="experiment folder (the expert data is shared)")
    ap.add_argument("--arm", required=True, help="name of the student (a folder under --run)")
    ap.add_argument(
        "--backend",
        default="mujoco",
        help="the simulator of the expert data and the evaluation (robosuite: its own tasks, "
        "e.g. --tasks lift,stack; give it its own --run, the expert folders are per task name)",
    )
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--train-seeds", default="0-119")
    ap.add_argument(
        "--per-task",
        type=int,
        default=106,
        help="expert episodes per task in the data (with --val-fraction 0.05: >= 100 "
        "train episodes)",
    )
    ap.add_argument(
        "--val-fraction",
        type=float,
        default=0.05,
        help="share of the episodes kept for the validation loss",
    )
    ap.add_argument("--finish-weight", type=float, default=1.0)
    ap.add_argument("--branch-weight", type=float, default=1.0, help="`learn dataset` option")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument(
        "--sft-procs",
        type=int,
        default=1,
        help="data-parallel `learn sft` processes under torchrun (gloo on CPUs); with P > 1 pass "
        "`--grad-accum` divided by P after `--`",
    )
    ap.add_argument("--split", choices=tuple(SPLITS), default="dev")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--max-new-tokens", type=int, default=int(EVAL_DECODING["max_new_tokens"]))
    add_eval_temperature(ap, "--temperature")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("sft_args", nargs=argparse.REMAINDER, help="-- then extra `learn sft` options")
    a = ap.parse_args()
    a.tasks = [t for t in a.tasks.split(",") if t]
    a.sft_args = [x for x in a.sft_args if x != "--"]
    root = Path(a.run)
    arm = root / a.arm
    arm.mkdir(parents=True, exist_ok=True)
    for stage in a.stages.split(","):
        if stage not in STAGES:
            raise SystemExit(f"unknown stage {stage!r}; valid: {', '.join(STAGES)}")
        t = time.perf_counter()
        if stage == "collect":
            collect(a, root)
        elif stage == "dataset" and not (arm / "data" / "stats.json").exists():
            dataset(a, root, arm)
        elif stage == "sft" and not (arm / "student" / "metrics.json").exists():
            run(sft_command(a, arm), arm / f"sft_{int(time.time())}.log")
        elif stage == "export" and not (arm / "package" / "student.json").exists():
            package(arm)
        elif stage == "eval":
            evaluate(a, arm)
        elif stage == "report":
            report(a, root, arm)
        print(f"[{stage}] {time.perf_counter() - t:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
