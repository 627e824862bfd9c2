"""The repository's own ruff, ruff format and mypy configuration passes (pyproject.toml)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


# the paths of `make lint` (Makefile LINT_PATHS)
PATHS = ["captain_ros", "tests", "benchmarks", "examples", "launch"]


def test_ruff_is_clean():
    proc = subprocess.run(
        [str(BIN / "ruff"), "check", *PATHS], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_ruff_format_is_clean():
    """Every file under the lint paths is ruff-formatted (there is no exemption list)."""
    proc = subprocess.run(
        [str(BIN / "ruff"), "format", "--check", *PATHS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


@pytest.mark.slow
def test_mypy_is_clean_on_the_core():
    proc = subprocess.run(
        [str(BIN / "mypy"), "--cache-dir", str(REPO / "build" / "mypy_cache")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]


DOCS = ["README.md", "examples/README.md", "docs/*.md", "captain_ros/**/*.md"]
REPO_PATH = re.compile(
    r"`((?:docs|examples|benchmarks|captain_ros|scripts|tests|launch|"
    r"requirements|interfaces)/[\w./-]*)`"
)


def test_doc_links_point_at_files():
    """Markdown links and `path/like/this` mentions in the docs name files that exist."""
    missing = []
    for pattern in DOCS:
        for doc in sorted(REPO.glob(pattern)):
            text = doc.read_text()
            links = re.findall(r"\]\(([^)#\s]+)", text)
            paths = REPO_PATH.findall(text)
            for target in links:
                if re.match(r"[a-z]+:", target):  # https:, mailto:
                    continue
                if not (doc.parent / target).exists():
                    missing.append(f"{doc.relative_to(REPO)}: link {target}")
            for path in paths:
                if not any(REPO.glob(path.rstrip("/"))):
                    missing.append(f"{doc.relative_to(REPO)}: {path}")
    assert not missing, "\n".join(missing)


def test_test_module_names_are_unique() -> None:
    """pytest imports test modules by basename (no packages under tests/): two test_x.py in
    different folders stop the whole collection."""
    names = [p.name for p in (REPO / "tests").rglob("*.py") if p.name != "conftest.py"]
    assert sorted({n for n in names if names.count(n) > 1}) == []
