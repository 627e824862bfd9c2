"""Issue 31 item 5: ``config/`` and ``urdf/`` are the repository's top-level folders, installed to
``share/captain_ros/``; :mod:`captain_ros.core.share` finds them from this checkout (the editable
install) and from an installed wheel (the prefix's ``share/``), then on ``AMENT_PREFIX_PATH`` and
under ``sys.prefix``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from captain_ros.core import share
from captain_ros.core.share import (
    ShareFileNotFound,
    config_file,
    resolve_path,
    share_path,
    share_roots,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_checkout_is_searched_first() -> None:
    assert share_roots()[0] == ROOT
    assert share_path("config", "piper.yaml") == ROOT / "config" / "piper.yaml"
    assert share_path("urdf", "piper_dual.xml") == ROOT / "urdf" / "piper_dual.xml"
    assert resolve_path("package://captain_ros/urdf/piper.urdf", Path("/")) == str(
        ROOT / "urdf" / "piper.urdf"
    )
    assert not (ROOT / "captain_ros" / "data" / "config").exists()  # one copy, at the top level


def _prefix_with(tmp_path: Path, name: str, rel: str) -> Path:
    prefix = tmp_path / name
    f = prefix / "share" / "captain_ros" / rel
    f.parent.mkdir(parents=True)
    f.write_text(f"from {name}\n")
    return prefix


def test_ament_prefixes_then_sys_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ament = _prefix_with(tmp_path, "ament", "config/only_ament.yaml")
    venv = _prefix_with(tmp_path, "venv", "config/only_venv.yaml")
    (venv / "share" / "captain_ros" / "config" / "only_ament.yaml").write_text("shadowed\n")
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{ament}{os.pathsep}{ament}")
    monkeypatch.setattr(sys, "prefix", str(venv))
    assert share_roots() == [ROOT, ament / "share/captain_ros", venv / "share/captain_ros"]
    assert share_path("config", "only_ament.yaml").read_text() == "from ament\n"
    assert share_path("config", "only_venv.yaml").read_text() == "from venv\n"
    assert share_path("config", "piper.yaml") == ROOT / "config" / "piper.yaml"
    assert config_file("only_venv.yaml") == venv / "share/captain_ros/config/only_venv.yaml"


def test_a_missing_file_names_every_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    with pytest.raises(ShareFileNotFound) as err:
        share_path("urdf", "xr1_arm.urdf")
    msg = str(err.value)
    assert msg.startswith("urdf/xr1_arm.urdf is not in any captain_ros share folder (")
    assert str(ROOT) in msg and str(tmp_path / "share" / "captain_ros") in msg
    assert isinstance(err.value, FileNotFoundError)
    # a user's path that names no shipped file stays as given (the loader says it is missing)
    assert config_file("my_rig/absent.yaml") == Path("my_rig/absent.yaml")


def test_an_installed_package_reads_its_prefix_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's own prefix: <prefix>/lib/python3.X/site-packages/captain_ros/core/share.py."""
    fake = Path("/opt/ros/x/lib/python3.11/site-packages/captain_ros/core/share.py")
    monkeypatch.setattr(share, "_HERE", fake)
    assert share_roots()[0] == Path("/opt/ros/x/share/captain_ros")
    fake = Path("/usr/lib/python3/dist-packages/captain_ros/core/share.py")
    monkeypatch.setattr(share, "_HERE", fake)
    assert share_roots()[0] == Path("/usr/share/captain_ros")


# What a wheel is built from (a copy: the checkout's build/ may hold files of older versions)
SOURCES = ("pyproject.toml", "README.md", "package.xml", "resource", "launch", "config", "urdf")

READERS = """
import sys
import captain_ros
from captain_ros.backends.mujoco.model import rig_xml
from captain_ros.backends.piper import default_config_path
from captain_ros.backends.ros_arm.config import RosArmConfig
from captain_ros.core.share import share_path
print(captain_ros.__file__)
print(share_path("config", "captain.yaml"))
print(default_config_path("piper_dual"))
print(RosArmConfig.load("config/ros_arm_piper.yaml").model)
print(len(rig_xml("piper")))
"""


def test_a_wheel_installs_config_and_urdf_to_share(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        p = ROOT / name
        (shutil.copytree if p.is_dir() else shutil.copy2)(p, src / name)
    shutil.copytree(ROOT / "scripts" / "ros" / "relay", src / "scripts" / "ros" / "relay")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "captain_ros", src / "captain_ros", ignore=ignore)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    wheels = tmp_path / "wheels"
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)]
    out = subprocess.run(build, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    (wheel,) = wheels.glob("captain_ros-*.whl")
    prefix = tmp_path / "prefix"
    install = [*pip, "install", "--no-deps", "--ignore-installed", "--prefix", str(prefix)]
    out = subprocess.run([*install, str(wheel)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    share_dir = prefix / "share" / "captain_ros"
    for rel in ("config/piper.yaml", "config/captain.yaml", "urdf/piper.xml", "urdf/piper.urdf"):
        assert (share_dir / rel).read_bytes() == (ROOT / rel).read_bytes()
    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = site / "site-packages"
    assert not (site / "captain_ros" / "data" / "config").exists()
    assert not (site / "captain_ros" / "data" / "urdf").exists()
    env = {k: v for k, v in os.environ.items() if k != "AMENT_PREFIX_PATH"}
    env["PYTHONPATH"] = str(site)
    run = subprocess.run(
        [sys.executable, "-c", READERS],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    where, params, dual, model, n = run.stdout.split()
    assert where == str(site / "captain_ros" / "__init__.py")
    assert params == str(share_dir / "config" / "captain.yaml")
    assert dual == str(share_dir / "config" / "piper_dual.yaml")
    assert model == str(share_dir / "urdf" / "piper.xml")
    assert int(n) == len((ROOT / "urdf" / "piper.xml").read_text())
