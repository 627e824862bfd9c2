"""``captain learn sft`` data-parallel under ``torchrun`` on the CPU (gloo, 2 processes).

Two processes with one sequence each per step must train exactly like one process accumulating
both sequences: the same loss curve, gradient norms and student, within float summation order.
The two sequences differ in length, so a per-process token count (instead of the whole step's)
or a missing gradient sync would show in the curve. The dataset holds exactly one global batch,
so the step's pair of sequences does not depend on the samplers' shuffling.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from sft_fixtures import episode_history, make_row, save_tiny, write_rows  # noqa: E402

from captain_ros.learn.sft import SftOptions, run_sft  # noqa: E402

pytestmark = [pytest.mark.learn, pytest.mark.slow]

STEPS = 4
CURVE = ("step", "loss", "grad_norm", "learning_rate")


def _exp_student():
    """``benchmarks/experiments/exp_student.py`` as a module (its ``sft_command``)."""
    here = Path(__file__).resolve().parents[2] / "benchmarks" / "experiments"
    spec = importlib.util.spec_from_file_location("exp_student_ddp", here / "exp_student.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(here))
    spec.loader.exec_module(mod)
    return mod


def _curve(out: Path) -> list[dict[str, float]]:
    lines = map(json.loads, (out / "train_log.jsonl").read_text().splitlines())
    return [{k: r[k] for k in CURVE} for r in lines if "loss" in r]


def test_two_gloo_processes_train_like_one_accumulating_process(tmp_path):
    torch.set_num_threads(1)
    base = save_tiny(tmp_path / "base", "qwen2", "smol")
    write_rows(
        tmp_path / "data",
        [make_row(episode_history(2), seed=1), make_row(episode_history(4), seed=2)],
    )
    common = dict(
        data=str(tmp_path / "data"),
        base=str(base),
        progress=False,
        bf16="off",
        val_fraction=0.0,
        lora_dropout=0.0,
        learning_rate=5e-3,
        epochs=float(STEPS),
        save_steps=1000,
        gradient_checkpointing="off",
    )
    one = run_sft(SftOptions(out=str(tmp_path / "one"), grad_accum=2, **common))
    assert one["processes"] == 1 and one["steps"] == STEPS

    # the data-parallel command exactly as the six-task experiment builds it (`--sft-procs 2`)
    exp_student = _exp_student()
    arm = tmp_path / "arm"
    arm.mkdir()
    (arm / "data").symlink_to(tmp_path / "data")
    ns = argparse.Namespace(sft_procs=2, epochs=float(STEPS), sft_args=[
        "--base", str(base), "--grad-accum", "1", "--lr", "5e-3", "--lora-dropout", "0",
        "--bf16", "off", "--val-fraction", "0", "--save-steps", "1000",
        "--gradient-checkpointing", "off", "--device", "cpu",
    ])  # fmt: skip
    cmd = exp_student.sft_command(ns, arm, cores=2)
    assert cmd[:2] == [sys.executable, "-m"] and "--nproc_per_node" in cmd
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "GLOO_SOCKET_IFNAME": "lo",
        "CUDA_VISIBLE_DEVICES": "",
    }
    # warm-up: both runs keep the default (the CLI has no flag for it)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    two = json.loads((arm / "student" / "metrics.json").read_text())
    assert two["processes"] == 2 and two["steps"] == STEPS and two["threads"] == 1

    a, b = _curve(tmp_path / "one"), _curve(arm / "student")
    assert [r["step"] for r in a] == [r["step"] for r in b] == list(range(1, STEPS + 1))
    assert a[-1]["loss"] < a[0]["loss"]  # it learns, so the comparison is not of constants
    for ra, rb in zip(a, b, strict=True):
        for k in CURVE:
            assert rb[k] == pytest.approx(ra[k], rel=1e-4, abs=1e-6), (ra["step"], k)
    from transformers import AutoModelForCausalLM

    wa = AutoModelForCausalLM.from_pretrained(tmp_path / "one").state_dict()
    wb = AutoModelForCausalLM.from_pretrained(arm / "student").state_dict()
    assert max(float((wa[k] - wb[k]).abs().max()) for k in wa) < 1e-4
