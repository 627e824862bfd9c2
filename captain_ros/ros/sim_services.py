"""Simulation-only services of the robot node: snapshot, restore, privileged state, load scene.

``/captain/robot/snapshot`` stores the whole robot side under an id: the backend state, the
safety layer's last targets, the motion history and, when the robot stack registered its
perception node (:attr:`SimServices.perception_of`), the perception store (observations,
detections, measurements; :mod:`captain_ros.harness.record.robot_state`). ``/captain/robot/restore``
restores it (bit-identical replay afterwards; a latched e-stop is never cleared by a restore).
Take snapshots between robot calls (the harness does, before every request): a call in flight on
another executor thread would be cut in half. ``/captain/robot/privileged_state`` returns the
simulator's ground truth as JSON (for the harness's host-success predicate; never for policies),
``/captain/robot/load_scene`` builds a task's scene for a seed, or resets the current scene from
the snapshot taken when it was built. On hardware the backend raises ``NotSupportedError`` and
the services answer ``success: false`` with its message. ``served`` (from
:func:`captain_ros.ros.access.debug_services`) leaves services out: a real rig offers no
``privileged_state`` at all, and snapshot/restore/load_scene only when its robot node's
``debug_services`` parameter asks for them. An emulated rig (the PiPER
emulator, the simulated ROS arm driver) offers it for the episode's final host-success judgement
only: the policy node records per-request privileged state (``/captain/privileged``) for the
simulation backends alone, so an emulated rig's bags keep the topic set of real hardware.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from captain_ros_interfaces.srv import LoadScene, PrivilegedState, Restore, Snapshot

from captain_ros.harness.record.robot_state import capture_robot_side, restore_robot_side
from captain_ros.ros import convert

MAX_SNAPSHOTS = 512
"""Snapshots kept at most (the harness stores one per request; an episode has at most 60 by
default). A scene load also drops every snapshot taken before the previous scene: restoring into
the episode that just ended still works, and memory does not grow over a long run (a 200-goal soak
grew the robot process by 80% when 512 whole-robot snapshots were kept)."""


class SimServices:
    """Attach the services to ``robot`` (a :class:`~captain_ros.ros.robot_node.RobotNode`)."""

    def __init__(self, robot: Any, group: Any, served: dict[str, bool] | None = None) -> None:
        self.robot = robot
        self.perception_of: Callable[[], Any] | None = None
        """Returns the perception service whose store belongs to the robot side (set by the
        robot stack; None: snapshots hold the backend and motion history only)."""
        self._snapshots: dict[str, tuple[int, Any]] = {}  # id -> (scene generation, snapshot)
        self._n = 0
        self._scene = 0
        services = [
            (Snapshot, "snapshot", self._on_snapshot),
            (Restore, "restore", self._on_restore),
            (LoadScene, "load_scene", self._on_load_scene),
            (PrivilegedState, "privileged_state", self._on_privileged),
        ]
        self._handlers = {name: (srv, cb) for srv, name, cb in services}
        self.served = tuple(name for _s, name, _c in services if (served or {}).get(name, True))
        for srv, name, cb in services:
            if name in self.served:
                robot.create_service(srv, f"/captain/robot/{name}", cb, callback_group=group)

    def handler(self, name: str) -> tuple[Any, Callable[[Any, Any], Any]]:
        """``(service type, callback)`` of a service, for the secured graph's signed commands
        (:mod:`captain_ros.ros.secure`), which serve it instead of a plain service."""
        return self._handlers[name]

    def _on_snapshot(self, _req: Snapshot.Request, resp: Snapshot.Response) -> Snapshot.Response:
        try:
            snap = capture_robot_side(self._side())
        except Exception as exc:  # noqa: BLE001 - NotSupportedError on hardware
            resp.success, resp.message = False, str(exc)
            return resp
        self._n += 1
        sid = f"snap_{self._n}"
        self._snapshots[sid] = (self._scene, snap)
        while len(self._snapshots) > MAX_SNAPSHOTS:  # bounded: the oldest go first
            self._snapshots.pop(next(iter(self._snapshots)))
        parts = ["backend"] + [
            n
            for n, v in (
                ("safety layer", snap.guards),
                ("motion history", snap.motion),
                ("perception store", snap.perception),
            )
            if v is not None
        ]
        resp.success, resp.message, resp.snapshot_id = True, "stored: " + ", ".join(parts), sid
        return resp

    def _side(self) -> Any:
        """The robot side as :mod:`captain_ros.harness.record.robot_state` reads it."""
        return SimpleNamespace(
            backend=self.robot.backend,
            motion=getattr(self.robot.service, "motion", None),
            perception=self.perception_of() if self.perception_of else None,
        )

    def _on_restore(self, req: Restore.Request, resp: Restore.Response) -> Restore.Response:
        if req.snapshot_id not in self._snapshots:
            resp.success = False
            resp.message = (
                f"unknown snapshot {req.snapshot_id!r}; known: {', '.join(self._snapshots)}"
            )
            return resp
        try:
            restore_robot_side(self._side(), self._snapshots[req.snapshot_id][1])
        except Exception as exc:  # noqa: BLE001
            resp.success, resp.message = False, str(exc)
            return resp
        resp.success, resp.message = True, "restored"
        return resp

    def _on_load_scene(
        self, req: LoadScene.Request, resp: LoadScene.Response
    ) -> LoadScene.Response:
        resp.success, resp.message = self.robot.load_scene(req.task, int(req.seed))
        if resp.success:
            self._scene += 1
            self._snapshots = {k: v for k, v in self._snapshots.items() if v[0] >= self._scene - 1}
        return resp

    @property
    def snapshot_ids(self) -> list[str]:
        """The snapshots that can be restored now, oldest first."""
        return list(self._snapshots)

    def _on_privileged(self, _req: Any, resp: PrivilegedState.Response) -> PrivilegedState.Response:
        try:
            resp.state_json = convert.dumps(self.robot.backend.privileged_state().to_dict())
            resp.success, resp.message = True, ""
        except Exception as exc:  # noqa: BLE001
            resp.success, resp.message = False, str(exc)
        return resp
