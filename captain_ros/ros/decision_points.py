"""Decision points on the ROS graph: restore a recorded episode's s_t through the robot node.

An episode the policy node ran over ROS recorded, before every request, a snapshot of the whole
robot side in the robot node (``/captain/robot/snapshot``, handle in ``privileged.jsonl``).
:class:`ServiceRestorer` is the :class:`~captain_ros.research.re0.decision_points.HandleRestorer` that
:func:`~captain_ros.research.re0.decision_points.restore_decision_point` uses there: it restores a
handle over ``/captain/robot/restore`` and reads the ground truth over
``/captain/robot/privileged_state``; the harness side (session variables included) is rebuilt from
the log in the calling process as everywhere else. The robot node keeps its newest 512
snapshots; an older handle is refused with the node's reason.
"""

from __future__ import annotations

import json
from typing import Any

from captain_ros_interfaces.srv import PrivilegedState as PrivilegedStateSrv
from captain_ros_interfaces.srv import Restore

from captain_ros.core.privileged import PrivilegedState
from captain_ros.harness.record.robot_state import RestoreRefused
from captain_ros.ros.calls import call_sync


class ServiceRestorer:
    """Restore and ground-truth clients on ``node`` (spun by an executor on another thread)."""

    def __init__(self, node: Any, timeout_s: float = 30.0, callback_group: Any = None) -> None:
        self.timeout_s = float(timeout_s)
        self.restore_client = node.create_client(
            Restore, "/captain/robot/restore", callback_group=callback_group
        )
        self.state_client = node.create_client(
            PrivilegedStateSrv, "/captain/robot/privileged_state", callback_group=callback_group
        )

    def wait_for_services(self, timeout_s: float = 10.0) -> bool:
        return all(
            c.wait_for_service(timeout_sec=timeout_s)
            for c in (self.restore_client, self.state_client)
        )

    def restore(self, handle: str) -> None:
        resp = call_sync(self.restore_client, Restore.Request(snapshot_id=handle), self.timeout_s)
        if resp is None or not resp.success:
            why = resp.message if resp is not None else "the robot node did not answer"
            raise RestoreRefused(f"the robot node cannot restore snapshot {handle!r}: {why}")

    def state(self) -> PrivilegedState:
        resp = call_sync(self.state_client, PrivilegedStateSrv.Request(), self.timeout_s)
        if resp is None or not resp.success:
            raise RestoreRefused(
                "the robot node's privileged state is unavailable: "
                + (resp.message if resp is not None else "no answer")
            )
        return PrivilegedState.from_dict(json.loads(resp.state_json))
