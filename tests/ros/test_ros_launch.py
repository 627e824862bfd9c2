"""`ros2 launch captain_ros captain.launch.py` from the pip (editable) set-up and from a non-editable
`pip install .`, driven with the real ros2 CLI: a full episode through `ros2 action send_goal
--feedback`, parameters, lifecycle, topics, nodes, services, bad goals. The colcon-built
workspace is launched in test_ros_colcon.py; the launch_testing test in test_ros_launch_testing.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ros_cli import VENV, RosCli, cli_env, goal, require_ros2_cli
from ros_fixtures import ROOT, STATE_DIR

pytestmark = pytest.mark.slow


def _subscriptions(cli: RosCli, topic: str) -> int:
    m = re.search(r"Subscription count: (\d+)", cli.run("topic", "info", topic).stdout)
    return int(m.group(1)) if m else 0


def _result_fields(text: str) -> dict[str, str]:
    """``key: value`` lines of the Result block of `ros2 action send_goal`."""
    block = text.split("Result:", 1)[1] if "Result:" in text else ""
    out = {}
    for line in block.splitlines():
        m = re.match(r"\s*(\w+): (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip().strip("'").replace("''", "'")  # YAML quoting
    return out


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RosCli, Path]]:
    """The launch file's graph (MuJoCo, recorder on) started with `ros2 launch` from the venv."""
    require_ros2_cli()
    tmp = tmp_path_factory.mktemp("launch")
    domain = 50 + os.getpid() % 10
    cli = RosCli(cli_env(domain), tmp)
    proc = cli.start(
        "launch",
        "captain_ros",
        "captain.launch.py",
        "backend:=mujoco",
        f"bag_dir:={tmp / 'bags'}",
        f"allowed_root:={tmp}",
        log=STATE_DIR / "children" / f"launch-{domain}.log",
    )
    try:
        cli.wait_for("action", "/captain/run_episode", 180.0, proc)
        yield cli, tmp
    finally:
        cli.stop_all()


def test_full_episode_through_send_goal_with_feedback(graph: tuple[RosCli, Path]) -> None:
    cli, tmp = graph
    before = _subscriptions(cli, "/captain/receipts")
    echo = cli.start(
        "topic",
        "echo",
        "--once",
        "/captain/receipts",
        "captain_ros_interfaces/msg/Receipt",
        log=tmp / "echo.log",
    )
    deadline = time.monotonic() + 120
    while _subscriptions(cli, "/captain/receipts") <= before:  # the echo has joined the graph
        assert time.monotonic() < deadline and echo.poll() is None, cli.log_of(echo)
    out = tmp / "ep_full"
    res = cli.run(
        "action",
        "send_goal",
        "--feedback",
        "/captain/run_episode",
        "captain_ros_interfaces/action/RunEpisode",
        goal(task="pick_place", seed=12, output_dir=str(out)),
        timeout_s=600.0,
    )
    text = res.stdout
    assert res.returncode == 0, text[-2000:] + res.stderr[-2000:]
    assert "Goal accepted" in text and "Goal finished with status: SUCCEEDED" in text
    assert text.count("Feedback:") >= 10 and "capability: move_to" in text
    fields = _result_fields(text)
    assert fields["outcome_label"] == "success_with_finish" and fields["strict_success"] == "true"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "mujoco" and summary["policy"] == "scripted"
    assert text.count("capability:") == summary["robot_calls"]  # every receipt came as feedback
    assert int(fields["calls"]) == summary["robot_calls"] and fields["bag_path"]
    echo.wait(60)
    assert "capability:" in cli.log_of(echo)  # `ros2 topic echo --once` saw a live receipt


def test_params_lifecycle_nodes_and_services(graph: tuple[RosCli, Path]) -> None:
    cli, _ = graph
    desc = cli.run("param", "describe", "/captain_robot", "joint_state_rate_hz").stdout
    assert "Type: double" in desc and "Hz" in desc and "Max value: 1000.0" in desc
    assert cli.run("lifecycle", "get", "/captain_robot").stdout.startswith("active [3]")
    assert (
        "Transitioning successful"
        in cli.run("lifecycle", "set", "/captain_robot", "deactivate").stdout
    )
    assert cli.run("lifecycle", "get", "/captain_robot").stdout.startswith("inactive [2]")
    assert (
        "Transitioning successful"
        in cli.run("lifecycle", "set", "/captain_robot", "activate").stdout
    )
    nodes = cli.run("node", "list").stdout.split()
    assert {"/captain_robot", "/captain_perception", "/captain_policy", "/captain_recorder"} <= set(
        nodes
    )
    services = cli.run("service", "list").stdout.split()
    assert {
        "/captain/robot/call",
        "/captain/perception/call",
        "/captain/estop/trigger",
        "/captain/estop/reset",
        "/captain/robot/snapshot",
        "/captain/robot/load_scene",
    } <= set(services)


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({"task": "nosuch", "seed": 1}, "unknown task 'nosuch'"),
        ({"task": "pick_place", "seed": -5}, "seed must be a non-negative int"),
        ({"task": "pick_place", "seed": 3, "policy": "nosuchpolicy"}, "nosuchpolicy"),
    ],
)
def test_bad_goals_abort_with_a_reason_and_the_graph_serves_the_next(
    graph: tuple[RosCli, Path], fields: dict[str, object], reason: str
) -> None:
    cli, tmp = graph
    res = cli.run(
        "action",
        "send_goal",
        "/captain/run_episode",
        "captain_ros_interfaces/action/RunEpisode",
        goal(**fields),
    )
    assert "Goal finished with status: ABORTED" in res.stdout, res.stdout[-2000:]
    out = _result_fields(res.stdout)
    assert out["outcome_label"] == "invalid_goal" and reason in out["summary_json"]
    ok = cli.run(
        "action",
        "send_goal",
        "/captain/run_episode",
        "captain_ros_interfaces/action/RunEpisode",
        goal(
            task="pick_place",
            seed=14,
            max_requests=2,
            output_dir=str(tmp / f"after_{fields['seed']}"),
        ),
    )
    assert "Goal finished with status: SUCCEEDED" in ok.stdout, ok.stdout[-2000:]


def test_non_editable_pip_install_launches(tmp_path: Path) -> None:
    """`pip install .` into a fresh prefix: data, share/ and lib/captain_ros executables are
    installed; the installed package (not the checkout) runs under `ros2 launch`."""
    require_ros2_cli()
    prefix = tmp_path / "prefix"
    # --ignore-installed: install beside the venv's editable copy instead of replacing it
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--ignore-installed",
            "--prefix",
            str(prefix),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    site = prefix / "lib" / "python3.11" / "site-packages"
    share = prefix / "share" / "captain_ros"
    assert (share / "launch" / "captain.launch.py").is_file() and (
        share / "config" / "captain.yaml"
    ).is_file()
    assert (share / "urdf" / "piper.xml").is_file()
    assert (
        prefix / "share" / "ament_index" / "resource_index" / "packages" / "captain_ros"
    ).is_file()
    for exe in ("captain_robot_stack", "captain_policy", "captain_recorder", "captain_up"):
        assert os.access(prefix / "lib" / "captain_ros" / exe, os.X_OK)
        shebang = (prefix / "bin" / exe).read_text().splitlines()[0]
        assert shebang == f"#!{VENV / 'bin' / 'python'}"  # the interpreter it was installed with
    domain = 40 + os.getpid() % 10
    env = cli_env(domain, ament_prefixes=(prefix, VENV), python_path=(site,))
    where = subprocess.run(
        [sys.executable, "-c", "import captain_ros, sys; print(captain_ros.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.stdout.strip().startswith(str(site))
    cli = RosCli(env, tmp_path)
    proc = cli.start(
        "launch",
        "captain_ros",
        "captain.launch.py",
        "backend:=fake",
        "record:=false",
        f"allowed_root:={tmp_path}",
        log=tmp_path / "launch.log",
    )
    try:
        cli.wait_for("action", "/captain/run_episode", 180.0, proc)
        res = cli.run(
            "action",
            "send_goal",
            "/captain/run_episode",
            "captain_ros_interfaces/action/RunEpisode",
            goal(task="pick_place", seed=3, max_requests=2, output_dir=str(tmp_path / "ep")),
        )
        assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-2000:]
        pids = re.findall(r"process started with pid \[(\d+)\]", cli.log_of(proc))
        cmdlines = [
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode() for pid in pids
        ]
        assert len(cmdlines) == 2 and all(
            f"{prefix}/lib/captain_ros/../../bin/captain_" in c for c in cmdlines
        ), cmdlines
    finally:
        cli.stop_all()


def test_launch_failures_say_why(tmp_path: Path) -> None:
    require_ros2_cli()
    cli = RosCli(cli_env(30 + os.getpid() % 10), tmp_path)
    res = cli.run(
        "launch",
        "captain_ros",
        "captain.launch.py",
        "backend:=mujoco",
        "task:=nosuch",
        "record:=false",
        timeout_s=180.0,
    )
    assert (
        "configure failed: UnknownNameError: unknown task 'nosuch'; valid:"
        in res.stdout + res.stderr
    )
    assert "Traceback" not in res.stdout + res.stderr
    res = cli.run("launch", "captain_ros", "captain.launch.py", "seed:=abc", timeout_s=60.0)
    assert "seed:=abc must be a non-negative integer" in res.stdout + res.stderr
    res = cli.run("launch", "captain_ros", "captain.launch.py", "engine:=onnx", timeout_s=60.0)
    assert "engine:=onnx; valid: auto, llamacpp, transformers" in res.stdout + res.stderr
    res = cli.run("launch", "captain_ros", "captain.launch.py", "backend:=gazebo", timeout_s=60.0)
    assert (
        "backend:=gazebo (unknown) is not implemented yet; implemented backends:"
        in res.stdout + res.stderr
    )
