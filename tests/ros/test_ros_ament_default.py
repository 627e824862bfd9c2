"""`ros2 launch captain_ros ...` in a shell that did not activate the venv (no AMENT_PREFIX_PATH)
finds the package in the venv (scripts/ament_overlay.sh's ``captain_ros_ament.pth``) instead of
printing ament_index's traceback; every other Python of the venv is left alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from ros_cli import ROS2, cli_env, require_ros2_cli

pytestmark = [pytest.mark.ros]


def test_ros2_launch_without_ament_prefix_path_finds_the_venv(tmp_path) -> None:
    require_ros2_cli()
    env = cli_env(60 + os.getpid() % 10)
    env.pop("AMENT_PREFIX_PATH")
    res = subprocess.run([str(ROS2), "launch", "captain_ros", "captain.launch.py",
                          "backend:=nosuch"], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "backend:=nosuch (unknown) is not implemented yet" in out, out
    assert "Traceback" not in out and "AMENT_PREFIX_PATH" not in out, out
    other = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('AMENT_PREFIX_PATH'))"],
                           env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert other.stdout.strip() == "None"
