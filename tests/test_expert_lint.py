"""The scripted expert's code (its session library included) is type-checked: every function
annotated, mypy clean (the repository-wide mypy run does not cover policy/ yet)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_mypy_is_clean_on_the_expert_with_every_function_annotated():
    files = ["captain_ros/policy/expert", "captain_ros/policy/scripted.py"]
    proc = subprocess.run(
        [
            str(BIN / "mypy"),
            "--disallow-untyped-defs",
            "--follow-imports=silent",
            "--cache-dir",
            str(REPO / "build" / "mypy_cache_expert"),
            *files,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
