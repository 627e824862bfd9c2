"""The ROS executables start through one guarded entry module: the same list in pyproject,
CMakeLists.txt and captain_ros.ros.entry, and a node interrupted while importing exits 130
without a traceback."""

from __future__ import annotations

import ast
import os
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


def node_modules() -> list[Path]:
    """Modules defining an rclpy node class (``class X(Node)`` / ``(LifecycleNode)``)."""
    found = []
    for folder in (ROOT / "captain_ros" / "ros", ROOT / "captain_ros" / "research" / "ros"):
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text())
            bases = [
                getattr(b, "id", getattr(b, "attr", ""))
                for node in tree.body
                if isinstance(node, ast.ClassDef)
                for b in node.bases
            ]
            if {"Node", "LifecycleNode"} & set(bases):
                found.append(path)
    return found


def test_every_node_module_has_a_main() -> None:
    """As in ros2/examples: each node module runs with ``python -m MODULE``."""
    modules = node_modules()
    assert ROOT / "captain_ros" / "ros" / "perception_node.py" in modules
    missing = [
        str(path.relative_to(ROOT))
        for path in modules
        if not any(
            isinstance(n, ast.FunctionDef) and n.name == "main"
            for n in ast.parse(path.read_text()).body
        )
    ]
    assert not missing, missing


def test_the_perception_node_runs_in_the_robot_stack_and_refuses_a_bad_parameter(
    domain_id: int,
) -> None:
    """``python -m captain_ros.ros.perception_node`` brings up the robot node (whose backend it
    serves) and then the perception node, which refuses an unknown segmenter in one line."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "captain_ros.ros.perception_node",
            "--ros-args",
            "-p",
            "captain_perception:segmenter:=bogus",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            **os.environ,
            "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
            "ROS_DOMAIN_ID": str(domain_id),
        },
    )
    assert proc.returncode == entry.EXIT_REFUSED, proc.stderr[-2000:]
    assert "configured mujoco backend" in proc.stderr + proc.stdout  # the robot node came up
    lines = [ln for ln in proc.stderr.splitlines() if "segmenter='bogus'" in ln]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
