"""Fixtures: the PiPER CAN emulator + the guarded PiperBackend on a fresh virtual channel."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("piper_sdk")

_channel = itertools.count()


def fresh_can() -> str:
    """A virtual CAN channel name no earlier test used (the SDK keeps one instance per name)."""
    return f"vcan-test-{next(_channel)}"


@pytest.fixture
def piper() -> Iterator[Any]:
    """The guarded PiPER backend against the emulator (pick_place seed 3, 96 px cameras)."""
    from captain_ros.backends import make_backend
    from captain_ros.tasks import get_task

    b = make_backend(
        "piper", get_task("pick_place").sample(3), emulate=True, can=fresh_can(), image_size_px=96
    )
    yield b
    b.close()
