"""The ROS package layout: manifests parse, and the ament_cmake install (what colcon runs) places
the Python package, the executables, launch/ and config/ where `ros2 launch`/`ros2 run` look."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from catkin_pkg.package import parse_package
from ros_fixtures import ROOT

VENV = Path(sys.prefix)


def test_manifests_parse_and_declare_dependencies():
    pkg = parse_package(str(ROOT / "package.xml"))
    assert pkg.name == "captain_ros" and pkg.get_build_type() == "ament_cmake"
    deps = {d.name for d in pkg.exec_depends + pkg.build_depends}
    assert {"rclpy", "captain_ros_interfaces", "tf2_msgs", "launch_ros"} <= deps
    iface = parse_package(str(ROOT / "interfaces" / "captain_ros_interfaces" / "package.xml"))
    assert "rosidl_interface_packages" in {g.name for g in iface.member_of_groups}
    assert (ROOT / "interfaces" / "tf2_msgs" / "COLCON_IGNORE").exists()


def test_ament_cmake_install_layout(tmp_path):
    env = dict(
        os.environ,
        AMENT_PREFIX_PATH=str(VENV),
        CMAKE_PREFIX_PATH=str(VENV),
        PATH=f"{VENV / 'bin'}:{os.environ['PATH']}",
    )
    prefix, build = tmp_path / "install", tmp_path / "build"
    for cmd in (
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build),
            f"-DCMAKE_INSTALL_PREFIX={prefix}",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ],
        ["cmake", "--build", str(build)],
        ["cmake", "--install", str(build)],
    ):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lib = prefix / "lib" / "captain_ros"
    for exe in ("captain_robot_stack", "captain_policy", "captain_recorder", "captain_up"):
        assert os.access(lib / exe, os.X_OK), exe
    share = prefix / "share" / "captain_ros"
    assert (share / "launch" / "captain.launch.py").exists()
    assert (share / "config" / "captain.yaml").exists() and (share / "package.xml").exists()
    assert (share / "urdf" / "piper.xml").exists() and (share / "urdf" / "piper_dual.urdf").exists()
    assert (
        prefix / "share" / "ament_index" / "resource_index" / "packages" / "captain_ros"
    ).exists()
    site = next((prefix / "lib").glob("python3*/site-packages"))
    assert (site / "captain_ros" / "ros" / "robot_node.py").exists()
