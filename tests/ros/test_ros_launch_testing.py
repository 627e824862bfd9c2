"""Runs the launch_testing test of the launch file (tests/launch/graph_launch_testing.py) with the
real `launch_test` command, as `colcon test` / `add_launch_test` would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ros_cli import VENV, cli_env, require_ros2_cli
from ros_fixtures import ROOT

pytestmark = pytest.mark.slow


def test_launch_file_passes_its_launch_testing_test(tmp_path: Path) -> None:
    require_ros2_cli()
    launch_test = VENV / "bin" / "launch_test"
    env = cli_env(70 + os.getpid() % 10)
    proc = subprocess.run(
        [
            str(launch_test),
            str(ROOT / "tests" / "launch" / "graph_launch_testing.py"),
            "--junit-xml",
            str(tmp_path / "junit.xml"),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Ran 2 tests" in out and "Ran 1 test" in out  # active-graph tests, then post-shutdown
    junit = (tmp_path / "junit.xml").read_text()
    assert 'failures="0"' in junit and "test_one_episode_with_feedback" in junit
