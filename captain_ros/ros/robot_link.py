"""What the policy node asks of the robot node besides robot calls (:class:`RobotLink`): its
``backend`` parameter (the record's backend name), its episode gate (the ``active_episode``
parameter), a scene load, and its ground truth (``privileged_state``, ``snapshot``). Each waits a
bounded time and answers a value, never raises (the goal then aborts with why):
:meth:`RobotLink.open_episode` answers a goal's :class:`~captain_ros.ros.goal_answer.Refusal`."""

from __future__ import annotations

import threading
from typing import Any

from captain_ros_interfaces.srv import LoadScene, Snapshot
from captain_ros_interfaces.srv import PrivilegedState as PrivilegedStateSrv
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.evaluation.episode import SIM_BACKENDS
from captain_ros.ros.calls import call_sync
from captain_ros.ros.credential import Signer
from captain_ros.ros.episode_glue import ServicePrivileged
from captain_ros.ros.goal_answer import GATE_NOT_OPENED, Refusal, no_heartbeat
from captain_ros.ros.policy_params import HARDWARE_TRUTH_WAIT_S, ROBOT_HEARTBEAT_WAIT_S
from captain_ros.ros.secure import SignedClient


class RobotLink:
    """The robot node's services and parameters as the policy node uses them (``signer``: the
    secured graph signs scene loads and snapshots)."""

    def __init__(self, node: Any, group: Any, signer: Signer | None = None) -> None:
        self.params = AsyncParameterClient(node, "captain_robot", callback_group=group)
        self.privileged = node.create_client(
            PrivilegedStateSrv, "/captain/robot/privileged_state", callback_group=group
        )
        if signer is None:
            self.load_scene_client: Any = node.create_client(
                LoadScene, "/captain/robot/load_scene", callback_group=group
            )
            self.snapshot: Any = node.create_client(
                Snapshot, "/captain/robot/snapshot", callback_group=group
            )
        else:
            self.load_scene_client = SignedClient(node, "load_scene", LoadScene, signer, group)
            self.snapshot = SignedClient(node, "snapshot", Snapshot, signer, group)

    def set_active_episode(self, episode_id: str) -> bool:
        return set_active_episode(self.params, episode_id)

    def backend(self) -> str:
        return robot_backend(self.params)

    def load_scene(self, hardware: bool, task: str, seed: int) -> str | None:
        return load_scene(self.load_scene_client, hardware, task, seed)

    def open_episode(
        self, hardware: bool, task: str, seed: int, episode_id: str, alive: Any
    ) -> Refusal | None:
        """Make the robot node ready for the episode ``episode_id`` of ``task``/``seed``: load its
        scene (a real rig, ``hardware``, may serve no scene load), open the episode gate and hear
        the robot process's heartbeat on ``alive`` (a :class:`~captain_ros.ros.liveness.Liveness`;
        a respawned robot answers before its instance is heard). None when ready, else why not
        (an opened gate is closed again)."""
        loaded = self.load_scene(hardware, task, seed)
        if loaded is not None:
            return Refusal("scene_not_loaded", loaded)
        if not self.set_active_episode(episode_id):
            return GATE_NOT_OPENED
        if not alive.wait_alive(ROBOT_HEARTBEAT_WAIT_S):
            self.set_active_episode("")
            return no_heartbeat(ROBOT_HEARTBEAT_WAIT_S)
        return None

    def ground_truth(self, backend: str, task: Any, call: Any) -> tuple[Any, Any]:
        """``(privileged source, host_success)`` of a goal on ``backend`` (``call``: the node's
        ``call_sync`` that gives up once the episode is lost). A simulation's per-request ground
        truth is mandatory: its services are waited for (discovery after a fresh launch can lag
        the action server). An emulated rig's judges the final state only (no per-request
        records: its bags stay those of the real rig); a real rig offers neither."""
        if backend in SIM_BACKENDS:
            if not self.privileged.wait_for_service(timeout_sec=10.0):
                raise InvalidArgumentError(
                    f"the {backend} robot node offers no privileged_state service"
                )
            return ServicePrivileged(self.privileged, self.snapshot, call), None
        if not self.privileged.wait_for_service(timeout_sec=HARDWARE_TRUTH_WAIT_S):
            return None, None
        source = ServicePrivileged(self.privileged, self.snapshot, call)
        return None, lambda: bool(task.success(source.state()))


def _reply(future: Any, timeout_s: float) -> Any:
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    return future.result() if done.wait(timeout_s) else None


def set_active_episode(params: Any, episode_id: str) -> bool:
    """Open (or with ``""`` close) the robot node's episode gate through its parameter client
    ``params``; True once it is applied."""
    if not params.wait_for_services(timeout_sec=10.0):
        return False
    reply = _reply(params.set_parameters([Parameter("active_episode", value=episode_id)]), 5.0)
    return reply is not None and all(r.successful for r in reply.results)


def robot_backend(params: Any) -> str:
    """The robot node's ``backend`` parameter (what the record names as backend; ``unknown``: no
    answer, the goal is refused with :data:`~captain_ros.ros.goal_answer.NO_BACKEND`)."""
    if not params.wait_for_services(timeout_sec=10.0):
        return "unknown"
    reply = _reply(params.get_parameters(["backend"]), 10.0)  # 2 s missed under load (CI)
    if reply is None or not reply.values:
        return "unknown"
    return str(reply.values[0].string_value or "unknown")


def load_scene(client: Any, hardware: bool, task: str, seed: int) -> str | None:
    """Ask the robot node to load ``task``/``seed``; None when loaded, else why not. A real rig
    serves no ``load_scene`` (debug_services): its scene is the table's, nothing to load."""
    if hardware and not client.wait_for_service(timeout_sec=HARDWARE_TRUTH_WAIT_S):
        return None
    if not client.wait_for_service(timeout_sec=10.0):
        return "the robot node is not running (no /captain/robot/load_scene)"
    resp = call_sync(client, LoadScene.Request(task=task, seed=seed), 120.0)
    if resp is None or not resp.success:
        return resp.message if resp is not None else "load_scene timed out"
    return None
