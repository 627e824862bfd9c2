"""The scripts in examples/ run, and what they print is what happened (real MuJoCo episodes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_example(name: str, *args: str, timeout_s: float = 600) -> str:
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / name), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


@pytest.mark.slow  # 15-25 s on the 2-core machine
def test_episode_in_process(tmp_path):
    out = tmp_path / "episode"
    text = run_example(
        "episode_in_process.py", "--task", "pick_place", "--seed", "3", "--out", str(out)
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "pick_place" and summary["seed"] == 3
    assert summary["outcome"] == "success_with_finish" and summary["strict_success"] is True
    # the live progress shows every request and the receipts of the robot calls
    assert len(re.findall(r"^request \d+$", text, re.M)) == summary["requests"]
    assert "  finish: " in text and "  move_to: " in text
    assert (
        f"outcome success_with_finish: strict success True after {summary['requests']} "
        f"requests and {summary['physical_actions']} physical actions"
    ) in text
    assert (out / "trajectory.jsonl").exists() and (out / "report.html").exists()
    assert (out / "bag" / "metadata.yaml").exists()


def test_robot_api_plain_python():
    text = run_example("robot_api_plain_python.py", "--seed", "3")
    assert "holding the cube: True" in text
    assert "release arm: released=True" in text
    measured = re.search(
        r"measured: cube ([\d.]+) cm from the plate centre \(tolerance ([\d.]+) cm\)", text
    )
    assert measured and float(measured.group(1)) < float(measured.group(2))
    assert "task success (privileged state): True" in text


@pytest.mark.slow
def test_compare_policies(tmp_path):
    out = tmp_path / "compare"
    text = run_example(
        "compare_policies.py",
        "--task",
        "open_drawer",
        "--seeds",
        "0-1",
        "--workers",
        "2",
        "--out",
        str(out),
    )
    # the expert opens the drawer on both seeds; letting go of the handle fails both
    assert "strict success 2/2 = 100.0%" in text and "strict success 0/2 = 0.0%" in text
    assert "paired episodes 2: both succeeded 0, only A 2, only B 0, neither 0" in text
    assert "exact McNemar p = 0.500" in text
    for run, rate in (("A", 1.0), ("B", 0.0)):
        report = json.loads((out / run / "eval.json").read_text())
        assert report["overall"]["strict_success"]["rate"] == rate
        assert sorted(e["seed"] for e in report["episodes"]) == [0, 1]


def test_compare_policies_refuses_held_out_seeds(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "compare_policies.py"),
            "--seeds",
            "1000-1002",
            "--out",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "training seeds" in proc.stderr
    assert not list(tmp_path.iterdir())
