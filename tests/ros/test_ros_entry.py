"""The ROS executables start through one guarded entry module: the same list in pyproject,
CMakeLists.txt and captain_ros.ros.entry, and a node interrupted while importing exits 130
without a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from captain_ros.ros import entry

ROOT = Path(__file__).resolve().parents[2]


def test_every_executable_is_listed_once_everywhere() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    ros = {k: v for k, v in scripts.items() if k != "captain"}
    assert set(ros) == set(entry.NODES)
    for exe, target in ros.items():
        module, fn = target.split(":")
        assert module == "captain_ros.ros.entry" and callable(getattr(entry, fn)), exe
    cmake = dict(re.findall(r'"(captain_\w+):([\w.]+)"', (ROOT / "CMakeLists.txt").read_text()))
    assert cmake == entry.NODES
    assert all((ROOT / "scripts" / "ros" / "relay" / exe).is_file() for exe in entry.NODES)


def test_an_interrupt_while_importing_exits_130_quietly(tmp_path: Path) -> None:
    (tmp_path / "slow_node.py").write_text("raise KeyboardInterrupt\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from captain_ros.ros.entry import run; "
        "sys.exit(run('slow_node', []))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 130 and "Traceback" not in proc.stderr


def test_run_passes_the_arguments_and_the_status(tmp_path: Path) -> None:
    (tmp_path / "echo_node.py").write_text("def main(argv):\n    return len(argv)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert entry.run("echo_node", ["a", "b", "c"]) == 3
    finally:
        sys.path.remove(str(tmp_path))
