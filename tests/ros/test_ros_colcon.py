"""The repository builds with colcon as a standard ROS 2 workspace (issue 6: "it also builds with
colcon"). The wheels' ament/rosidl toolchain in the venv is the underlay; the built interfaces are
then imported *from the colcon install prefix* and a message is round-tripped through rclpy's
serializer, and the ament index of the install finds the package's share folder (launch, config).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)

pytestmark = pytest.mark.slow


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.splitlines() if (REPO / f).is_file()]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    colcon = VENV / "bin" / "colcon"
    if not colcon.exists():
        pytest.fail(
            "colcon is not installed; scripts/setup.sh installs it from requirements/dev.txt"
        )
    ws = tmp_path_factory.mktemp("ws")
    src = ws / "src" / "captain_ros"
    for rel in _tracked_files():  # a clean checkout, as `git clone` would give
        dst = src / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, dst)
    env = {
        **os.environ,
        "AMENT_PREFIX_PATH": str(VENV),
        "CMAKE_PREFIX_PATH": str(VENV),
        "PATH": f"{VENV / 'bin'}:{os.environ.get('PATH', '')}",
    }
    proc = subprocess.run(
        [
            str(colcon),
            "--log-base",
            str(ws / "log"),
            "build",
            "--base-paths",
            str(src),
            str(src / "interfaces" / "captain_ros_interfaces"),
            "--build-base",
            str(ws / "build"),
            "--install-base",
            str(ws / "install"),
            "--cmake-args",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 packages finished" in proc.stdout
    return ws / "install"


def test_colcon_install_layout(workspace: Path) -> None:
    share = workspace / "captain_ros" / "share" / "captain_ros"
    assert (share / "package.xml").is_file()
    assert (share / "launch" / "captain.launch.py").is_file()
    assert list((share / "config").glob("*.yaml"))
    assert (share / "urdf" / "piper.xml").is_file()
    for exe in ("captain_robot_stack", "captain_policy", "captain_recorder", "captain_up"):
        assert os.access(workspace / "captain_ros" / "lib" / "captain_ros" / exe, os.X_OK)
    site = workspace / "captain_ros" / "lib" / "python3.11" / "site-packages" / "captain_ros"
    assert (site / "core" / "result.py").is_file()


def test_colcon_built_interfaces_are_usable(workspace: Path) -> None:
    prefix = workspace / "captain_ros_interfaces"
    code = (
        "import captain_ros_interfaces\n"
        "from captain_ros_interfaces.msg import Receipt\n"
        "from rclpy.serialization import serialize_message, deserialize_message\n"
        "m = Receipt(capability='move_to', success=True, receipt='stopped at contact')\n"
        "back = deserialize_message(serialize_message(m), Receipt)\n"
        "from ament_index_python.packages import get_package_share_directory\n"
        "print(captain_ros_interfaces.__file__)\n"
        "print(back.capability, back.receipt)\n"
        "print(get_package_share_directory('captain_ros'))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(prefix / "lib" / "python3.11" / "site-packages"),
        "LD_LIBRARY_PATH": f"{prefix / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}",
        "AMENT_PREFIX_PATH": f"{prefix}:{workspace / 'captain_ros'}:{VENV}",
    }
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith(str(prefix))  # imported from the colcon install, not the venv
    assert lines[1] == "move_to stopped at contact"
    assert lines[2] == str(workspace / "captain_ros" / "share" / "captain_ros")


def test_colcon_install_launches_and_completes_an_episode(workspace: Path, tmp_path: Path) -> None:
    """`ros2 launch` + `ros2 action send_goal` against the colcon install (not the checkout)."""
    from ros_cli import RosCli, cli_env, goal, require_ros2_cli

    require_ros2_cli()
    pkg, ifaces = workspace / "captain_ros", workspace / "captain_ros_interfaces"
    exe = pkg / "lib" / "captain_ros" / "captain_policy"
    assert (
        exe.read_text().splitlines()[0] == f"#!{sys.executable}"
    )  # the interpreter it was built for
    sites = [p / "lib" / "python3.11" / "site-packages" for p in (pkg, ifaces)]
    env = cli_env(60 + os.getpid() % 10, ament_prefixes=(pkg, ifaces, VENV), python_path=sites)
    env["LD_LIBRARY_PATH"] = f"{ifaces / 'lib'}:{env.get('LD_LIBRARY_PATH', '')}"
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
            "--feedback",
            "/captain/run_episode",
            "captain_ros_interfaces/action/RunEpisode",
            goal(task="pick_place", seed=7, max_requests=3, output_dir=str(tmp_path / "ep")),
        )
        assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-2000:]
        assert "Feedback:" in res.stdout and "requests: 3" in res.stdout
        assert (tmp_path / "ep" / "summary.json").is_file()
        pids = re.findall(r"process started with pid \[(\d+)\]", cli.log_of(proc))
        cmdlines = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") for pid in pids]
        # the interpreter runs the colcon-installed executables with the installed parameters
        assert len(cmdlines) == 2 and all(
            c[1].decode().startswith(str(pkg / "lib" / "captain_ros")) for c in cmdlines
        ), cmdlines
    finally:
        cli.stop_all()
