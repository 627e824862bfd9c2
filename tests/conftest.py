"""Test tiers: ``make test`` runs everything, ``make test-fast`` runs ``-m "not ros and not learn
and not slow"``.

- ``ros`` and ``learn`` are given here from a module's folder and imports, ``slow`` from the
  measured list ``tiers.SLOW`` (both on top of any marker written in a module).
- Without an importable rclpy every ``ros`` module is skipped at collection with its reason,
  instead of failing to import.
- A test that imports rclpy or a learning framework at run time without its marker is named in
  the terminal summary, so a marker that is missing shows up in the run that missed it.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tiers import LEARN_ROOTS, ROS_ROOTS, is_slow, tiers_of

_unmarked_imports: list[str] = []


@functools.cache
def ros_unavailable() -> str | None:
    """Why the ROS tests cannot run here, or None when rclpy imports."""
    try:
        importlib.import_module("rclpy")
    except ImportError as exc:
        return f"rclpy is not importable ({exc})"
    return None


class _SkippedModule(pytest.File):
    """A ROS test module on a machine without rclpy: one skip with the reason, nothing imported."""

    def collect(self) -> Iterator[pytest.Item]:
        pytest.skip(f"ROS tier: {ros_unavailable()}", allow_module_level=True)
        yield from ()


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.File | None:
    if "ros" in tiers_of(module_path) and ros_unavailable():
        return _SkippedModule.from_parent(parent, path=module_path)
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        for tier in sorted(tiers_of(path)):
            item.add_marker(tier)
        if is_slow(item.nodeid):
            item.add_marker("slow")


def _loaded(roots: frozenset[str]) -> frozenset[str]:
    return frozenset(root for root in roots if root in sys.modules)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    before = {"ros": _loaded(ROS_ROOTS), "learn": _loaded(LEARN_ROOTS)}
    yield
    for tier, roots in (("ros", ROS_ROOTS), ("learn", LEARN_ROOTS)):
        new = _loaded(roots) - before[tier]
        if new and item.get_closest_marker(tier) is None:
            _unmarked_imports.append(
                f"{item.nodeid} imported {', '.join(sorted(new))} without the {tier} marker"
            )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _unmarked_imports:
        terminalreporter.section("tests that need a tier marker")
        for line in _unmarked_imports:
            terminalreporter.write_line(line)
