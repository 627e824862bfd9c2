"""`captain coevolve run|eval|report` as a user runs them (subprocesses of the real CLI)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "captain_ros.cli.main", "coevolve"]


def captain(*args, timeout=300):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def test_run_writes_summary_memory_and_report(tmp_path):
    out = tmp_path / "run"
    p = captain(
        "run",
        "--layout",
        "base",
        "--roles",
        "scripted",
        "--seed",
        "5",
        "--budget",
        "2",
        "--out",
        str(out),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "T  1 initialize" in p.stdout and p.stdout.strip().splitlines()[-2].startswith("B: ")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outcome"]["charged"] == 2 and summary["config"]["seed"] == 5
    assert (out / "report.html").is_file() and (out / "memory" / "action_exemplars.json").is_file()
    again = captain(
        "run",
        "--seed",
        "5",
        "--budget",
        "1",
        "--memory",
        str(out / "memory"),
        "--json",
        "--out",
        str(tmp_path / "transfer"),
    )
    assert again.returncode == 0 and json.loads(again.stdout)["config"]["memory_in"] == str(
        out / "memory"
    )
    report = captain("report", str(out))
    assert report.returncode == 0 and report.stdout.strip().endswith("report.html")


def test_eval_prints_the_metrics_table(tmp_path):
    p = captain(
        "eval",
        "--layout",
        "base",
        "--conditions",
        "coevolve,nomem",
        "--n",
        "1",
        "--seeds",
        "5",
        "--budget",
        "2",
        "--out",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "SR %" in p.stdout and "PAUC %" in p.stdout and "B:1" in p.stdout
    rows = json.loads((tmp_path / "eval.json").read_text())
    assert [r["condition"] for r in rows] == ["coevolve", "nomem"] and rows[0]["n"] == 1
    assert Path(tmp_path / "coevolve" / "base_5" / "summary.json").is_file()


def test_bad_input_gets_one_clear_line_and_a_nonzero_status(tmp_path):
    bad = captain("run", "--layout", "l9", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert (
        "unknown layout 'l9'; valid: base, l2, l3, l4" in bad.stderr
        and "Traceback" not in bad.stderr
    )
    nobank = captain("eval", "--conditions", "bank", "--out", str(tmp_path / "y"))
    assert nobank.returncode == 2 and "needs an existing --memory" in nobank.stderr
    missing = captain("run", "--memory", str(tmp_path / "nope"), "--out", str(tmp_path / "z"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    cond = captain("eval", "--conditions", "magic", "--out", str(tmp_path / "w"))
    assert cond.returncode == 2 and "unknown condition(s) magic" in cond.stderr
