"""Done-when of issue 16: the scripted expert runs a full pick-and-place episode through
``--backend piper`` against the CAN emulator, with receipts; and ``captain hw check``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hardware.conftest import fresh_can


@pytest.mark.slow
def test_expert_pick_place_through_the_piper_backend(tmp_path: Path) -> None:
    from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.episode import run_one

    s = run_one(
        EpisodeConfig(
            "pick_place",
            3,
            str(tmp_path),
            backend=BackendConfig(
                "piper", {"emulate": True, "can": fresh_can(), "image_size_px": 256}
            ),
            recording=RecordingConfig(report=False),
        )
    )
    assert s.outcome == "success_with_finish", s.to_dict()
    lines = [json.loads(x) for x in (tmp_path / "trajectory.jsonl").read_text().splitlines()]
    receipts = [c for x in lines for c in x.get("calls", []) if isinstance(c, dict)]
    assert s.physical_actions >= 6 and receipts or s.requests >= 4
    assert (tmp_path / "bag" / "metadata.yaml").is_file()


def test_hw_check_reports_without_moving() -> None:
    cmd = [
        sys.executable,
        "-m",
        "captain_ros.cli.main",
        "hw",
        "check",
        "--emulate",
        "--can",
        fresh_can(),
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    checks = json.loads(out.stdout)
    names = {c["name"] for c in checks}
    assert {"arm: link", "arm: enable state", "arm: joint limits", "camera head", "e-stop"} <= names
    assert all(c["ok"] for c in checks)
    assert any("disabled" in c["detail"] for c in checks if c["name"] == "arm: enable state")


def test_hw_check_bus_down_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "piper.yaml"
    cfg.write_text("piper: {rig: piper, can: {arm: can7}}\n")
    out = subprocess.run(
        [sys.executable, "-m", "captain_ros.cli.main", "hw", "check", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "can7 is down or missing" in lines[0]
    cfg.write_text("piper: {rig: piper, cann: {arm: can7}}\n")  # a typo in a key
    out = subprocess.run(
        [sys.executable, "-m", "captain_ros.cli.main", "hw", "check", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "unknown piper key(s) cann" in out.stderr
