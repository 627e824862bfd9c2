"""`captain up`: the composed one-process graph runs an episode through the RunEpisode action."""

from __future__ import annotations

import json
import subprocess
import sys

from ros_fixtures import ROOT, STATE_DIR

from captain_ros.bags.rosbag2 import summarize_bag
from captain_ros.ros.env import ros_environment


def test_captain_up_runs_one_episode_and_prints_summary(tmp_path, domain_id):
    env = ros_environment(STATE_DIR, domain_id)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "captain_ros.ros.up",
            "--backend",
            "fake",
            "--task",
            "pick_place",
            "--seed",
            "1000",
            "--max-requests",
            "2",
            "--out",
            str(tmp_path / "ep"),
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = proc.stdout
    summary = json.loads(out[out.index("{\n") :])
    assert summary["requests"] == 2 and summary["outcome"] == "budget_exhausted"
    assert summary["robot_calls"] > 0
    receipt_lines = [ln for ln in out.splitlines() if ln.startswith("[")]
    assert len(receipt_lines) >= summary["robot_calls"]  # printed live from the action feedback
    assert (tmp_path / "ep" / "trajectory.jsonl").exists()
    bag = summarize_bag(summary["bag"])
    assert bag.counts["/captain/receipts"] == len(receipt_lines)
    assert bag.counts["/joint_states"] > 0


def test_up_parser_and_unimplemented_backend(tmp_path, domain_id):
    import argparse

    from captain_ros.ros import up

    parser = argparse.ArgumentParser()
    up.add_arguments(parser)
    args = parser.parse_args(
        ["--backend", "xr1", "--out", str(tmp_path), "--domain-id", str(domain_id)]
    )
    assert args.backend == "xr1" and args.seed == 1000
    env = ros_environment(STATE_DIR, domain_id)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "captain_ros.ros.up", "--backend", "xr1", "--out", str(tmp_path)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "not implemented yet; implemented: mujoco, fake" in proc.stderr


def test_launch_file_declares_arguments_and_backends():
    """The launch file's arguments (read statically) and its backend names (the module, loaded as
    `ros2 launch` loads it): every name comes from the backend registry, none is listed there."""
    import ast
    import importlib.util

    from captain_ros.backends.registry import BACKENDS, GRAPH_ONLY, REGISTRY

    path = ROOT / "launch" / "captain.launch.py"
    tree = ast.parse(path.read_text())
    declared = {
        c.args[0].value
        for c in ast.walk(tree)
        if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "DeclareLaunchArgument"
    }
    assert {"backend", "task", "seed", "policy", "params_file", "record"} <= declared
    listed = {
        e.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name) and t.id.endswith("BACKENDS")
        for e in ast.walk(n.value)
        if isinstance(e, ast.Constant) and e.value in REGISTRY
    }
    assert not listed, f"the launch file's *_BACKENDS list registry names itself: {sorted(listed)}"
    spec = importlib.util.spec_from_file_location("captain_launch", path)
    assert spec is not None and spec.loader is not None
    launch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launch)
    # every backend is launched, or refused at launch with the line to use instead
    assert set(launch.IMPLEMENTED_BACKENDS) | set(launch.NOT_LAUNCHED_BACKENDS) == set(BACKENDS)
    assert not set(launch.IMPLEMENTED_BACKENDS) & set(launch.NOT_LAUNCHED_BACKENDS)
    assert all(REGISTRY[b].refusal for b in launch.NOT_LAUNCHED_BACKENDS)
    assert {"mujoco", "piper", "xr1", "humanoid"} <= set(launch.KNOWN_BACKENDS)
    assert set(launch.KNOWN_BACKENDS) == set(BACKENDS) | set(GRAPH_ONLY)
    executables = {
        kw.value.value
        for c in ast.walk(tree)
        if isinstance(c, ast.Call)
        for kw in c.keywords
        if kw.arg == "executable"
    }
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert executables and all(f'"{e}:captain_ros.' in cmake for e in executables)  # configured
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert all(
        f"scripts/ros/relay/{e}" in pyproject and (ROOT / "scripts" / "ros" / "relay" / e).is_file()
        for e in executables
    )  # and relayed to lib/captain_ros by a pip install
