"""Issue 36: relative paths in a rig config resolve against the config file's folder (a user's
file) or the working directory (a packaged config named from anywhere), never silently into the
installed package; ``package://captain_ros/...`` names a packaged file on purpose. ``captain hw
check`` with no arguments answers about the bus, the first thing a rig without wiring lacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from captain_ros.backends.piper.config import PiperConfig
from captain_ros.backends.ros_arm.config import RosArmConfig
from captain_ros.core.share import config_base, is_shipped, resolve_path, share_path


def test_resolve_path_rules(tmp_path: Path) -> None:
    assert resolve_path("package://captain_ros/urdf/piper.xml", tmp_path) == str(
        share_path("urdf", "piper.xml")
    )
    assert resolve_path("/abs/head.yaml", tmp_path) == "/abs/head.yaml"
    assert resolve_path("calib/head.yaml", tmp_path) == str(tmp_path / "calib" / "head.yaml")
    assert resolve_path("", tmp_path) == ""
    assert config_base(share_path("config", "xr1.yaml")) == Path.cwd()
    mine = tmp_path / "rig" / "xr1.yaml"
    assert config_base(mine) == mine.parent.resolve()


def test_packaged_configs_resolve_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    piper = PiperConfig.load("config/piper.yaml")
    assert piper.cameras["head"].calibration == str(tmp_path / "calibration" / "head.yaml")
    calib = tmp_path / "build" / "ros_arm_sim"
    arm = RosArmConfig.load("config/ros_arm_piper.yaml")  # its model is package://captain_ros/...
    assert arm.model == str(share_path("urdf", "piper.xml"))
    assert arm.cameras["head"].calibration == str(calib / "head.yaml")
    for path in (arm.cameras["wrist"].calibration, piper.cameras["wrist"].calibration):
        assert not is_shipped(Path(path))


def test_a_users_config_resolves_against_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = tmp_path / "rig"
    rig.mkdir()
    (rig / "piper.yaml").write_text(share_path("config", "piper.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    cfg = PiperConfig.load("rig/piper.yaml")
    assert cfg.cameras["head"].calibration == str(rig / "calibration" / "head.yaml")


def test_hw_check_without_arguments_names_the_bus(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "captain_ros.cli.main", "hw", "check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert "CAN interface can0 is down or missing" in lines[0]
    assert "calibration" not in lines[0]
