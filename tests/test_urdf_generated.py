"""The committed robot descriptions (``urdf/``) are what ``scripts/generate_urdf.py`` writes from
the PiPER's published kinematics (``scripts/piper_kinematics.py``): regenerated into a scratch
folder, every file matches byte for byte, and MuJoCo compiles each MJCF."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mujoco

ROOT = Path(__file__).resolve().parents[1]
FILES = ("piper.xml", "piper.urdf", "piper_dual.xml", "piper_dual.urdf")


def test_the_committed_descriptions_are_the_generators_output(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_urdf.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)
    for name in FILES:
        assert (tmp_path / name).read_text() == (ROOT / "urdf" / name).read_text(), name
    for rig in ("piper", "piper_dual"):
        model = mujoco.MjModel.from_xml_path(str(tmp_path / f"{rig}.xml"))
        assert model.nu == 8 * (2 if rig == "piper_dual" else 1)
