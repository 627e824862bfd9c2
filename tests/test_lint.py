"""The repository's own ruff, ruff format and mypy configuration passes (pyproject.toml)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


# the paths of `make lint` (Makefile LINT_PATHS)
PATHS = ["captain_ros", "tests", "benchmarks", "examples", "launch"]


def test_ruff_is_clean():
    proc = subprocess.run([str(BIN / "ruff"), "check", *PATHS],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_ruff_format_is_clean():
    """New files are ruff-formatted; the older ones in ruff-format-legacy.toml are left alone."""
    proc = subprocess.run([str(BIN / "ruff"), "format", "--check", *PATHS],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


@pytest.mark.slow
def test_mypy_is_clean_on_the_core():
    proc = subprocess.run([str(BIN / "mypy"), "--cache-dir", str(REPO / "build" / "mypy_cache")],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:]
