"""Followed call by call, one episode never returns into a harness module it has left.

A real front-end episode (``captain run``'s in-process setup: the scripted expert on the fake
backend, with the privileged record, the MCAP bag writer, the report and a progress observer)
runs under :func:`sys.setprofile`. At every call into ``captain_ros.harness`` the stack of
``captain_ros`` modules is read (consecutive frames of one module count once): a harness module
that is on the stack twice, with another module between, was re-entered after the episode had
left it (for example the loop -> an observer -> the loop, or the setup -> the loop -> a
privileged source defined beside the setup).
"""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any

from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, RecordingConfig
from captain_ros.evaluation.episode import local_setup


def module_stack(frame: FrameType | None) -> list[str]:
    """The ``captain_ros`` modules on the stack, innermost first, runs of one module merged."""
    stack: list[str] = []
    while frame is not None:
        mod = str(frame.f_globals.get("__name__", ""))
        if mod.startswith("captain_ros.") and (not stack or stack[-1] != mod):
            stack.append(mod)
        frame = frame.f_back
    return stack


def reentries(stack: list[str]) -> list[str]:
    """Harness modules that occur more than once in ``stack`` (outermost first, as a path)."""
    path = list(reversed(stack))
    return [
        m for m in dict.fromkeys(path) if m.startswith("captain_ros.harness") and path.count(m) > 1
    ]


class Tracer:
    def __init__(self) -> None:
        self.calls = 0
        self.modules: set[str] = set()
        self.found: dict[tuple[str, ...], str] = {}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not str(frame.f_globals.get("__name__", "")).startswith(
            "captain_ros.harness"
        ):
            return
        self.calls += 1
        stack = module_stack(frame)
        self.modules.add(stack[0])
        for mod in reentries(stack):
            self.found.setdefault(
                tuple(reversed(stack)), f"{mod} re-entered ({frame.f_code.co_name})"
            )


def test_the_check_sees_a_reentry():
    assert reentries(
        [
            "captain_ros.harness.episode.loop",
            "captain_ros.report.observer",
            "captain_ros.harness.episode.loop",
            "captain_ros.harness.episode.setup",
        ]
    ) == ["captain_ros.harness.episode.loop"]
    assert (
        reentries(
            [
                "captain_ros.harness.episode.observers",
                "captain_ros.harness.episode.loop",
                "captain_ros.harness.episode.setup",
            ]
        )
        == []
    )


def test_one_episode_never_returns_into_a_module_it_has_left(tmp_path):
    events: list[str] = []
    setup, backend = local_setup(
        EpisodeConfig(
            "pick_place",
            0,
            str(tmp_path / "ep"),
            backend=BackendConfig("fake"),
            recording=RecordingConfig(bag_images=False),
        ),
        on_event=lambda kind, _: events.append(kind),
    )
    tracer = Tracer()
    threading.setprofile(tracer)
    sys.setprofile(tracer)
    try:
        record = setup.run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        backend.close()
    assert record.outcome == "success_with_finish", record
    assert record.privileged and (tmp_path / "ep" / "bag").exists() and events
    # the episode went through every part of the harness that one episode uses
    for mod in (
        "episode.setup",
        "episode.loop",
        "episode.calls",
        "episode.cells",
        "episode.observers",
        "episode.context",
        "record.privileged_log",
        "record.backend_source",
        "record.trajectory",
        "sandbox.session",
        "sandbox.wire",
    ):
        assert f"captain_ros.harness.{mod}" in tracer.modules, mod
    assert tracer.calls > 1000
    assert not tracer.found, "\n".join(
        f"{why}: {' -> '.join(path)}" for path, why in tracer.found.items()
    )
