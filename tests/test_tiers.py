"""The test tiers: markers from folders and imports, and ROS modules skipped cleanly without rclpy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tiers import ROOT, SLOW, TESTS, is_slow, tiers_of


def test_modules_get_the_tier_of_what_they_import() -> None:
    # a ROS test by its folder, even one whose imports are lazy
    assert "ros" in tiers_of(TESTS / "ros" / "test_ros_arm_bridge.py")
    # torch through the package: test_sft_train imports captain_ros.learn modules that import it
    assert "learn" in tiers_of(TESTS / "learn" / "test_sft_train.py")
    # the fast tier: pure-python and MuJoCo modules
    assert tiers_of(TESTS / "test_core_geometry.py") == frozenset()
    assert tiers_of(TESTS / "test_mujoco_backend.py") == frozenset()
    assert "learn" not in tiers_of(TESTS / "learn" / "test_re0_bounds.py")


def test_a_module_importing_rclpy_through_the_package_is_ros(tmp_path: Path) -> None:
    module = tmp_path / "test_probe.py"
    module.write_text("def test_x():\n    from captain_ros.ros.arm_bridge import transport\n")
    assert tiers_of(module) == frozenset({"ros"})
    other = tmp_path / "test_probe_learn.py"  # (tiers caches by path)
    other.write_text("import pytest\ntorch = pytest.importorskip('torch')\n")
    assert tiers_of(other) == frozenset({"learn"})


def test_ros_modules_skip_at_collection_without_rclpy(tmp_path: Path) -> None:
    # an rclpy that cannot be imported, first on the path (as on a machine without ROS 2)
    (tmp_path / "rclpy").mkdir()
    (tmp_path / "rclpy" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'rclpy'\", name='rclpy')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    files = ["tests/ros/test_ros_bag.py", "tests/ros/test_ros_convert.py", "tests/test_tiers.py"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            *files,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "error" not in out.lower(), out
    assert "SKIPPED [2]" in out and "rclpy is not importable" in out, out
    assert "tests/test_tiers.py::test_ros_modules_skip_at_collection_without_rclpy" in out
    assert "test_ros_bag.py::" not in out


def test_every_slow_entry_names_a_test_that_exists() -> None:
    for entry in SLOW:
        module, _, function = entry.partition("::")
        path = TESTS / module
        assert path.is_file(), f"SLOW names a missing module: {entry}"
        assert not function or f"def {function}(" in path.read_text(), f"no such test: {entry}"
    assert is_slow("tests/test_cli_run.py::test_anything")
    assert is_slow("tests/test_cli_errors.py::test_bad_input_is_one_line_and_a_nonzero_exit[run x]")
    assert not is_slow("tests/test_cli_errors.py::test_help_lists_every_subcommand")


def test_an_unmarked_test_importing_a_framework_is_named(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(
        "import sys, types\n\n"
        "def test_imports_torch():\n"
        "    sys.modules['torch'] = types.ModuleType('torch')\n\n"
        "def test_imports_nothing():\n"
        "    pass\n"
    )
    env = {**os.environ, "PYTHONPATH": str(TESTS)}  # tests/conftest.py as the plugin `conftest`
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            "test_probe.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "test_probe.py::test_imports_torch imported torch without the learn marker" in out
    assert "test_imports_nothing imported" not in out
