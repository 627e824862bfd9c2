"""The held-out evaluation of a loan (``loan_six.py eval``): ``exp_student.py``'s ``captain eval``
command in chunks of seeds run side by side, skipped when done, none started that would not end
before the deadline, and one still running then stopped and removed (module docstring of
``loan_six.py``)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import exp_student


def plan(a: argparse.Namespace) -> list[tuple[str, int, int]]:
    lo, end = exp_student.SPLITS[a.split]
    end = min(end, lo + a.n) if a.n else end
    # seed chunk by seed chunk across the tasks: a deadline leaves every task's first seeds done
    return [(t, s, min(s + a.chunk, end) - 1) for s in range(lo, end, a.chunk) for t in a.tasks]


def _chunk_dir(arm: Path, split: str, chunk: tuple[str, int, int]) -> Path:
    task, lo, hi = chunk
    return arm / f"eval_{split}" / task / f"{lo}-{hi}"


def _launch(a: argparse.Namespace, arm: Path, chunk: tuple[str, int, int]) -> subprocess.Popen:
    task, lo, hi = chunk
    out = _chunk_dir(arm, a.split, chunk)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [*exp_student.CAPTAIN, "eval", "--backend", "mujoco", "--task", task,
           "--seeds", f"{lo}-{hi}", "--policy", "transformers",
           "--model-folder", str(arm / "package"), "--engine", "llamacpp",
           "--max-new-tokens", str(a.max_new_tokens), "--temperature", "0",
           "--profile", "student", "--no-bag", "--workers", str(min(hi - lo + 1, a.workers)),
           "--overwrite", "--out", str(out), *a.eval_args]  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with open(out.with_suffix(".log"), "w") as log:  # the child keeps its own copy
        return subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def evaluate(a: argparse.Namespace) -> int:
    arm = Path(a.arm)
    t0 = time.monotonic()
    deadline = t0 + a.deadline_s
    todo = [c for c in plan(a) if not (_chunk_dir(arm, a.split, c) / "eval.json").exists()]
    slots = max(1, a.workers // a.chunk)
    running: dict[tuple[str, int, int], tuple[subprocess.Popen, float]] = {}
    durations: list[float] = []
    stopped: list[str] = []
    failed: list[str] = []
    while todo or running:
        now = time.monotonic()
        estimate = max(durations, default=a.chunk_s)
        while todo and len(running) < slots and now + estimate < deadline:
            c = todo.pop(0)
            running[c] = (_launch(a, arm, c), now)
        if not running:
            break  # what is left would not end before the deadline
        time.sleep(1.0)
        for c, (proc, start) in list(running.items()):
            name = "{}/{}-{}".format(*c)
            if proc.poll() is not None:
                del running[c]
                if proc.returncode == 0 and (_chunk_dir(arm, a.split, c) / "eval.json").exists():
                    durations.append(time.monotonic() - start)
                    print(f"[eval] {name} in {durations[-1]:.0f} s", flush=True)
                else:
                    failed.append(name)
                    print(f"[eval] {name} failed ({proc.returncode})", flush=True)
            elif time.monotonic() > deadline:
                _stop(proc)
                shutil.rmtree(_chunk_dir(arm, a.split, c), ignore_errors=True)
                del running[c]
                stopped.append(name)
                todo.insert(0, c)
    done = [c for c in plan(a) if (_chunk_dir(arm, a.split, c) / "eval.json").exists()]
    progress = {
        "split": a.split,
        "chunks_done": len(done),
        "chunks": len(plan(a)),
        "episodes_done": sum(hi - lo + 1 for _, lo, hi in done),
        "left": ["{}/{}-{}".format(*c) for c in todo],
        "stopped_at_deadline": stopped,
        "failed": failed,
        "wall_s": time.monotonic() - t0,
        "chunk_s": durations,
    }
    (arm / "eval_progress.json").write_text(json.dumps(progress, indent=2) + "\n")
    print(
        f"[eval] {progress['chunks_done']}/{progress['chunks']} chunks "
        f"({progress['episodes_done']} episodes) in {progress['wall_s']:.0f} s; "
        f"{len(todo)} left",
        flush=True,
    )
    return 1 if failed else 0
