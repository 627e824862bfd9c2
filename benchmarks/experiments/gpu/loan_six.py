"""Issue 30's six-task student in one GPU loan: train on the GPU, export the adapter, run the
held-out evaluation on the machine's CPU cores until a deadline, and pack what comes back.

The steps (``loan_six.sh`` runs them there; each can run alone, here too, on the CPU):

- ``train``: ``captain learn sft`` with the CPU run's recipe (LoRA r16, lr 5e-4, 2 epochs, no
  dropout, 5% validation, seed 0), except the batch: whole sequences packed into rows of
  ``--pack-tokens`` tokens, one row per optimizer step, no activation recomputation. Then
  ``ARM/loan_train.json``: tokens/s and the model-FLOPs utilisation (MFU), 6 N FLOPs per trained
  token (N: the base's parameters) plus, separately, causal attention, over the chip's dense bf16
  peak (from its name) and over a bf16 matmul measured in the same run;
- ``export``: ``exp_student.package``: ``captain learn export --adapter`` (the LoRA adapter as a
  llama.cpp GGUF, checked against transformers) and ``ARM/package/`` (what ships);
- ``eval``: ``captain eval --policy transformers --model-folder ARM/package --engine llamacpp`` on
  held-out seeds 1500-1549 of each task (``--split dev``: 900-919), the same command as
  ``exp_student.py``'s eval stage, in chunks of ``--chunk`` seeds with one worker per seed,
  ``--workers`` // ``--chunk`` chunks at a time. A chunk whose ``eval.json`` exists is skipped; no
  chunk starts that would not end before ``--deadline-s`` (the longest chunk so far, or
  ``--chunk-s``, is the estimate), and one still running at the deadline is stopped and its folder
  removed, so every ``eval.json`` that comes back is whole. ``ARM/eval_progress.json`` says what is
  done;
- ``pack OUT``: what comes back, at most 8 files of at most 15 MiB: ``loan_six.tar`` (the figures,
  the student's metadata and ``package/``), the adapter in parts, the evaluation (per chunk:
  ``eval.json``; per episode: ``summary.json`` and ``trajectory.jsonl``) as ``eval.tar.gz`` parts;
- ``links FOLDER`` (here): identical files become links (``loan_six.sh here`` packs llama.cpp's
  libraries with it);
- ``take DIR --arm ARM [--data DATA]`` (here): unpack into ``ARM`` (the layout of an
  ``exp_student.py`` arm, for its ``report`` stage and ``scripts/ship_student.py``), check the
  adapter's sha256, point the episodes' folders at ``ARM``, copy the dataset into ``ARM/data``.

Run there: ``bash benchmarks/experiments/gpu/loan_six.sh run`` (docs/gpu.md, "The six-task student
in one loan"). Here, toy size: ``tests/learn/test_gpu_loan.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # loan_*.py here, exp_student beside this folder

import exp_student  # noqa: E402
from loan_eval import evaluate  # noqa: E402
from loan_mfu import train_figures  # noqa: E402

from captain_ros.core.episode_folder import SUMMARY, TRAJECTORY  # noqa: E402

RECIPE = ["--base", "smollm2", "--epochs", "2", "--lr", "5e-4", "--lora-r", "16",
          "--lora-alpha", "32", "--lora-dropout", "0.0", "--val-fraction", "0.05",
          "--seed", "0"]  # fmt: skip
"""The CPU run's options (/work/runs/s17/six/student/sft_config.json) that the loan keeps (its
warm-up, 3% of the steps, is the default)."""
PART = 15 * 2**20


def _captain(*args: str, log: Path) -> None:
    exp_student.run([*exp_student.CAPTAIN, *args], log)


# -- train -------------------------------------------------------------------------------------


def train(a: argparse.Namespace) -> int:
    arm = Path(a.arm)
    if not (arm / "data" / "stats.json").exists():
        shutil.copytree(a.data, arm / "data", dirs_exist_ok=True)
    student = arm / "student"
    t = time.perf_counter()
    checkpointing = a.checkpointing
    while not (student / "metrics.json").exists():
        resume = ["--resume"] if any((student / "checkpoints").glob("checkpoint-*")) else []
        try:
            _captain("learn", "sft", "--data", str(arm / "data"), "--out", str(student), *RECIPE,
                     "--batch-size", "1", "--grad-accum", str(a.grad_accum),
                     "--pack-tokens", str(a.pack_tokens), "--gradient-checkpointing", checkpointing,
                     "--eval-steps", str(a.eval_steps), "--save-steps", str(a.save_steps),
                     "--device", a.device, "--no-progress", *resume, *a.sft_args,
                     log=arm / "sft.log")  # fmt: skip
        except SystemExit:
            log = (arm / "sft.log").read_text(errors="replace")
            if checkpointing == "on" or "out of memory" not in log.lower():
                raise
            # the packed rows did not fit: the same run, recomputing activations (from the start:
            # a resume needs the same options)
            print("[train] out of memory: again with --gradient-checkpointing on", flush=True)
            shutil.copy(arm / "sft.log", arm / "sft_oom.log")
            shutil.rmtree(student)
            checkpointing = "on"
    print(f"[train] {time.perf_counter() - t:.0f} s", flush=True)
    fig = train_figures(student, a.device)
    (arm / "loan_train.json").write_text(json.dumps(fig, indent=2) + "\n")
    print(json.dumps(fig, indent=2), flush=True)
    return 0


def export(a: argparse.Namespace) -> int:
    arm = Path(a.arm)
    if not (arm / "package" / "student.json").exists():
        exp_student.package(arm)
    print(f"[export] {arm / 'package'}: {sorted(p.name for p in (arm / 'package').iterdir())}")
    return 0


# -- pack / take -------------------------------------------------------------------------------


def _split(path: Path, out: Path) -> list[Path]:
    data = path.read_bytes()
    parts = [out / f"{path.name}.part-{i:02d}" for i in range(max(1, -(-len(data) // PART)))]
    for i, p in enumerate(parts):
        p.write_bytes(data[i * PART : (i + 1) * PART])
    return parts


def pack(a: argparse.Namespace) -> int:
    arm, out = Path(a.arm), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / "loan_six.tar", "w") as tar:
        for rel in ("loan_train.json", "eval_progress.json", "sft.log", "export.log",
                    "student/metrics.json", "student/sft_config.json", "student/train_log.jsonl",
                    "student/export.json", "student/adapter/adapter_config.json", "package"):  # fmt: skip
            if (arm / rel).exists():
                tar.add(arm / rel, arcname=rel)
    adapter = arm / "student" / "adapter" / "adapter_model.safetensors"
    if adapter.exists():
        (out / "adapter.sha256").write_text(hashlib.sha256(adapter.read_bytes()).hexdigest())
        _split(adapter, out)
    folder = arm / f"eval_{a.split}"
    if folder.is_dir():
        buf = out / "eval.tar.gz"
        with tarfile.open(buf, "w:gz") as tar:
            for chunk in sorted(folder.glob("*/*-*/eval.json")):
                tar.add(chunk, arcname=str(chunk.relative_to(arm)))
                for f in sorted(chunk.parent.glob("*/seed_*/*")):
                    if f.name in (SUMMARY, TRAJECTORY):
                        tar.add(f, arcname=str(f.relative_to(arm)))
        _split(buf, out)
        buf.unlink()
    (out / "loan_root.txt").write_text(str(arm.resolve()))
    files = sorted(p.name for p in out.iterdir())
    print(f"[pack] {len(files)} files: {', '.join(files)}")
    return 0 if len(files) <= 8 else 1


def _joined(folder: Path, name: str) -> bytes | None:
    parts = sorted(folder.glob(f"{name}.part-*"))
    return b"".join(p.read_bytes() for p in parts) if parts else None


def take(a: argparse.Namespace) -> int:
    src, arm = Path(a.dir), Path(a.arm)
    arm.mkdir(parents=True, exist_ok=True)
    if a.data and not (arm / "data" / "stats.json").exists():  # the dataset the loan carried
        shutil.copytree(a.data, arm / "data", dirs_exist_ok=True)
    root = (src / "loan_root.txt").read_text().strip()
    with tarfile.open(src / "loan_six.tar") as tar:
        tar.extractall(arm, filter="data")
    adapter = _joined(src, "adapter_model.safetensors")
    if adapter is not None:
        if hashlib.sha256(adapter).hexdigest() != (src / "adapter.sha256").read_text().strip():
            print("loan_six take: the adapter's parts do not match its sha256", file=sys.stderr)
            return 2
        (arm / "student" / "adapter" / "adapter_model.safetensors").write_bytes(adapter)
    gguf = arm / "package" / "adapter.f16.gguf"
    if gguf.exists() and not (arm / "student" / gguf.name).exists():
        shutil.copy(gguf, arm / "student" / gguf.name)  # export.json names it there
    evals = _joined(src, "eval.tar.gz")
    n = 0
    if evals is not None:
        with tarfile.open(fileobj=io.BytesIO(evals), mode="r:gz") as tar:
            tar.extractall(arm, filter="data")
        for f in arm.glob("eval_*/*/*-*/eval.json"):
            text = f.read_text()
            f.write_text(text.replace(root, str(arm.resolve())))  # the episodes' folders
            n += 1
    print(f"[take] {arm}: student metadata, adapter, {n} evaluation chunks")
    return 0


def links(a: argparse.Namespace) -> int:
    """Identical files of ``a.folder`` (an installed wheel's ``.so``, ``.so.0``, ``.so.0.x.y``)
    become links to the one with the longest name: the dynamic loader finds every name still."""
    groups: dict[str, list[Path]] = {}
    for f in sorted(Path(a.folder).iterdir()):
        if f.is_file() and not f.is_symlink():
            groups.setdefault(hashlib.sha256(f.read_bytes()).hexdigest(), []).append(f)
    for files in groups.values():
        keep = max(files, key=lambda f: len(f.name))
        for f in files:
            if f != keep:
                f.unlink()
                f.symlink_to(keep.name)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", required=True)
    t.add_argument("--arm", required=True)
    t.add_argument("--device", default="cuda")
    t.add_argument("--pack-tokens", type=int, default=32768)
    t.add_argument("--grad-accum", type=int, default=1)
    t.add_argument("--checkpointing", default="off", choices=("auto", "on", "off"))
    t.add_argument("--eval-steps", type=int, default=50)
    t.add_argument("--save-steps", type=int, default=50)
    t.add_argument("sft_args", nargs=argparse.REMAINDER, help="-- then more `learn sft` options")
    e = sub.add_parser("export")
    e.add_argument("--arm", required=True)
    v = sub.add_parser("eval")
    v.add_argument("--arm", required=True)
    v.add_argument("--split", default="heldout", choices=tuple(exp_student.SPLITS))
    v.add_argument("--tasks", default=",".join(exp_student.TASKS))
    v.add_argument("--n", type=int, default=0, help="first N seeds of the split per task (0: all)")
    v.add_argument("--workers", type=int, default=16)
    v.add_argument("--chunk", type=int, default=4, help="seeds per chunk (one worker each)")
    v.add_argument("--deadline-s", type=float, default=360.0)
    v.add_argument("--chunk-s", type=float, default=90.0, help="a chunk's time until one ended")
    v.add_argument("--max-new-tokens", type=int, default=160)
    v.add_argument(
        "eval_args", nargs=argparse.REMAINDER, help="-- then more `captain eval` options"
    )
    p = sub.add_parser("pack")
    p.add_argument("--arm", required=True)
    p.add_argument("--split", default="heldout", choices=tuple(exp_student.SPLITS))
    p.add_argument("out")
    k = sub.add_parser("take")
    k.add_argument("dir")
    k.add_argument("--arm", required=True)
    k.add_argument("--data", default=None, help="the dataset the loan trained on, into ARM/data")
    n = sub.add_parser("links")
    n.add_argument("folder")
    a = ap.parse_args(argv)
    if a.step == "train":
        a.sft_args = [x for x in a.sft_args if x != "--"]
        return train(a)
    if a.step == "eval":
        a.tasks = [x for x in a.tasks.split(",") if x]
        a.eval_args = [x for x in a.eval_args if x != "--"]
        return evaluate(a)
    return {"export": export, "pack": pack, "take": take, "links": links}[a.step](a)


if __name__ == "__main__":
    sys.exit(main())
