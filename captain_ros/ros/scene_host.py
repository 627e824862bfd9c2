"""The robot node's backend across scene loads, without ROS (:class:`SceneHost`).

The robot node (:mod:`captain_ros.ros.robot_node`) hosts one backend behind a
:class:`~captain_ros.ros.locked_backend.LockedBackend` and serves motion over it. A scene load for
the current task and seed restores the snapshot taken when it was first loaded (a hardware
backend has none: the scene is the table's); another task or seed builds a new backend through
the composition root and swaps it in under the lock, keeping an e-stop latch. A fixed (injected)
backend refuses other scenes. Listeners (the perception node's cache reset) run after each load.

A latch tripped below the node (a safety guard, the hardware's own stop) is the robot's e-stop,
exactly like the operator's: the host follows the latch of every backend it hosts, keeps the trip's
reason across scene loads and backend rebuilds, and calls :attr:`SceneHost.on_latched` (the robot
node publishes ``/captain/estop/state``; the policy node then refuses new goals).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from captain_ros.evaluation.episode import robot_service
from captain_ros.ros.locked_backend import LockedBackend

Make = Callable[[str, int], Any]
"""``make(task, seed)``: a new backend of that scene (raises on an unknown task or a bad seed)."""


class SceneHost:
    """One locked backend and its scene (``make``: how another scene's backend is built; None:
    a fixed backend injected by the caller, which this host never closes)."""

    def __init__(self, make: Make | None) -> None:
        self.make = make
        self.backend: LockedBackend | None = None
        self.service: Any = None
        self.scene: tuple[str, int] | None = None
        self.initial: Any = None
        self.latched_reason: str | None = None  # the e-stop latch across backend rebuilds
        self.listeners: list[Callable[[], None]] = []
        self.on_latched: Callable[[], None] | None = None  # a latch below the node tripped

    def open(self, inner: Any, task: str, seed: int) -> LockedBackend:
        """Host ``inner`` for ``task``/``seed`` (a latch from before a close is kept)."""
        self.backend = LockedBackend(inner, latched_reason=self.latched_reason)
        self._follow_latch()
        self.set_scene(task, seed)
        return self.backend

    def _follow_latch(self) -> None:
        """Hear the trips of the hosted backend's own latch (the safety layer's)."""
        latch = getattr(self.require().inner, "latch", None)
        if latch is not None:
            latch.listeners.append(self._latched)

    def _latched(self, event: Any) -> None:
        backend = self.backend
        if backend is not None and backend.latched_reason is None:
            backend.latched_reason = f"{event.source}: {event.reason}"
        if self.on_latched is not None:
            self.on_latched()

    def close(self) -> None:
        """Close the backend (an injected one stays open); its latch is remembered."""
        if self.backend is not None:
            self.latched_reason = self.backend.latched_reason
            if self.make is not None:
                self.backend.close()
        self.backend = None

    def require(self) -> LockedBackend:
        """The hosted backend (robot calls, scene loads and the e-stop state need one)."""
        if self.backend is None:
            raise RuntimeError("the robot node is not configured (no backend)")
        return self.backend

    def set_scene(self, task: str, seed: int) -> None:
        """Fresh motion service over the (new) backend; remember its initial snapshot."""
        backend = self.require()
        self.scene = (task, seed)
        try:
            self.initial = backend.snapshot()
        except Exception:  # noqa: BLE001 - hardware: no snapshots
            self.initial = None
        self.service = robot_service(backend)  # motion; perception: the perception node

    def load(self, task: str, seed: int) -> tuple[bool, str, bool]:
        """Reset the current scene or build another: ``(success, message, swapped)`` (swapped: a
        new backend is inside, its latch followed)."""
        swapped = False
        if (task, seed) == self.scene and self.initial is not None:
            backend = self.require()
            with backend.lock:
                backend.restore(self.initial)
                self.set_scene(task, seed)
            message = "scene reset to its initial state"
        elif (task, seed) == self.scene:
            return True, "scene loaded (this backend has no snapshot to reset it)", False
        elif self.make is None:
            return False, f"this robot node hosts a fixed backend with scene {self.scene}", False
        else:
            try:
                new = self.make(task, seed)
            except Exception as exc:  # noqa: BLE001 - unknown task, bad seed
                return False, f"cannot load {task!r} seed {seed}: {exc}", False
            backend = self.require()
            with backend.lock:
                backend.swap(new)
                self._follow_latch()
                self.set_scene(task, seed)
            swapped, message = True, f"loaded {task} seed {seed}"
        for listener in self.listeners:
            listener()
        return True, message, swapped
