"""The robot node's scene bookkeeping without ROS (captain_ros.ros.scene_host): reset to the first
snapshot, another scene swaps a new backend in, a fixed backend refuses, a bad scene is a message."""

from __future__ import annotations

from typing import Any

import numpy as np

from captain_ros.evaluation.config import BackendConfig
from captain_ros.evaluation.episode import make_robot_backend
from captain_ros.ros.scene_host import SceneHost

FAKE = BackendConfig("fake")


def _make(task: str, seed: int) -> Any:
    return make_robot_backend(FAKE, task, seed)


def _state(host: SceneHost) -> list[float]:
    """The arm's joints and every object's position (what a reset must bring back)."""
    backend = host.require()
    objects = backend.privileged_state().objects.values()
    return [
        *np.round(backend.joint_state("arm").position_rad, 6).tolist(),
        *(round(float(x), 6) for o in objects for x in o.position_m),
    ]


def test_reset_swap_and_refusals() -> None:
    host = SceneHost(_make)
    heard: list[int] = []
    host.listeners.append(lambda: heard.append(1))
    backend = host.open(_make("pick_place", 3), "pick_place", 3)
    try:
        assert host.scene == ("pick_place", 3) and host.initial is not None
        first = _state(host)
        r = host.service.call("move_to", {"position": [0.3, 0.0, 0.25], "arm": "arm"})
        assert r.success, r.message
        assert _state(host) != first
        ok, message, swapped = host.load("pick_place", 3)
        assert (ok, swapped) == (True, False) and "reset" in message and heard == [1]
        assert _state(host) == first
        inner = backend.inner
        ok, message, swapped = host.load("stack", 4)
        assert (ok, swapped, message) == (True, True, "loaded stack seed 4")
        assert host.scene == ("stack", 4) and backend.inner is not inner and heard == [1, 1]
        ok, message, swapped = host.load("juggle", 1)
        assert not ok and message.startswith("cannot load 'juggle' seed 1") and heard == [1, 1]
        ok, message, _ = host.load("stack", -1)
        assert not ok and "non-negative" in message and host.scene == ("stack", 4)
    finally:
        host.close()
    assert host.backend is None


def test_a_fixed_backend_refuses_other_scenes_and_stays_open() -> None:
    inner = _make("pick_place", 1)
    host = SceneHost(None)
    host.open(inner, "pick_place", 1)
    ok, message, swapped = host.load("stack", 2)
    assert not ok and not swapped and "fixed backend" in message
    host.close()
    assert inner.joint_state("arm").position_rad is not None  # not closed by the host
    inner.close()


def test_a_latch_tripped_below_the_host_is_kept_across_scenes_and_reported() -> None:
    """A safety guard's trip is the robot's e-stop: its reason is kept through a backend swap and
    a close/open cycle, and the latch of each new backend is followed too."""
    host = SceneHost(_make)
    reported: list[bool] = []
    host.on_latched = lambda: reported.append(host.require().estopped)
    backend = host.open(_make("pick_place", 3), "pick_place", 3)
    try:
        backend.inner.latch.trip("workspace", "the tool left the workspace")
        assert backend.latched_reason == "workspace: the tool left the workspace"
        assert reported == [True]
        ok, message, swapped = host.load("stack", 4)  # a new backend, latched as the old one
        assert ok and swapped, message
        assert backend.estopped and backend.latched_reason.startswith("workspace")
        backend.reset_estop()
        assert not backend.estopped
        backend.inner.latch.trip("joint_limits", "J2 beyond its limit")  # the new backend's latch
        assert backend.latched_reason == "joint_limits: J2 beyond its limit"
        assert reported == [True, True]
    finally:
        host.close()
    reopened = host.open(_make("stack", 4), "stack", 4)  # configure again after a cleanup
    try:
        assert reopened.estopped and reopened.latched_reason.startswith("joint_limits")
    finally:
        host.close()
