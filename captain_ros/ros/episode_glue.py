"""Glue between the action server and the harness: the policy node's episode observers and its
privileged source over the robot node's simulation services.

- :class:`CancelObserver` ends the episode at the next request boundary once the operator cancels
  the goal (robot calls still inside the current cell are refused by the caller).
- :class:`StopWhen` ends it there for another reason (the robot process died, the node stops).
- :class:`GoalObserver` publishes every receipt the moment it returns (``/captain/receipts``),
  sends it as action feedback with the progress, publishes the hidden per-request records on
  ``/captain/privileged`` (simulation only; the recorder puts them in the bag), the episode's
  ``trajectory.jsonl`` lines on ``/captain/trajectory`` (what ``captain learn dataset`` reads from
  a bag) and counts this episode's failed calls.
- :class:`ServicePrivileged` reads ground truth and stores snapshots through the services.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from captain_ros_interfaces.action import RunEpisode
from captain_ros_interfaces.srv import PrivilegedState as PrivilegedStateSrv
from captain_ros_interfaces.srv import Snapshot
from std_msgs.msg import String

from captain_ros.core.errors import NotSupportedError
from captain_ros.core.privileged import PrivilegedState
from captain_ros.harness.episode.observers import CallEvent, EpisodeObserver, Stop
from captain_ros.ros import convert


class CancelObserver(EpisodeObserver):
    """Stops the episode before the next request once ``cancelled()`` is true."""

    def __init__(self, cancelled: Callable[[], bool]) -> None:
        self.cancelled = cancelled

    def before_request(self, t: int) -> Stop | None:
        return Stop("canceled") if self.cancelled() else None


class StopWhen(EpisodeObserver):
    """Stops the episode before the next request with the reason ``reason()`` returns (falsy:
    go on), e.g. ``robot_lost`` once the robot process died."""

    def __init__(self, reason: Callable[[], str | None | bool]) -> None:
        self.reason = reason

    def before_request(self, t: int) -> Stop | None:
        why = self.reason()
        return Stop(str(why)) if why else None


class GoalObserver(EpisodeObserver):
    """Live receipts, feedback and privileged records of one RunEpisode goal."""

    def __init__(
        self,
        goal_handle: Any,
        receipt_pub: Any,
        privileged_pub: Any,
        episode_id: str,
        max_requests: int,
        trajectory_pub: Any = None,
    ) -> None:
        self.goal = goal_handle
        self.trajectory_pub = trajectory_pub
        self.receipt_pub = receipt_pub
        self.privileged_pub = privileged_pub
        self.episode_id = episode_id
        self.max_requests = max(1, int(max_requests))
        self.request = 0
        self.calls = 0
        self.failures = 0

    def before_request(self, t: int) -> None:
        self.request = t

    def on_call(self, event: CallEvent) -> None:
        self.calls = event.index
        self.failures += int(not event.result.success)
        msg = convert.result_to_receipt(
            event.result,
            event.name,
            episode_id=self.episode_id,
            request_index=event.request,
            call_index=event.index,
            stamp_s=time.time(),
            duration_s=event.duration_s,
        )
        self.receipt_pub.publish(msg)
        self.goal.publish_feedback(
            RunEpisode.Feedback(
                receipts=[msg],
                requests_done=event.request,
                calls_done=event.index,
                progress=min(1.0, event.request / self.max_requests),
                phase="running",
            )
        )

    def on_privileged(self, line: dict[str, Any]) -> None:
        self.privileged_pub.publish(
            String(data=json.dumps({"episode_id": self.episode_id, **line}))
        )

    def on_trajectory(self, line: dict[str, Any]) -> None:
        if self.trajectory_pub is not None:
            self.trajectory_pub.publish(
                String(data=json.dumps({"episode_id": self.episode_id, **line}, default=str))
            )


class ServicePrivileged:
    """The robot node's ``privileged_state`` and ``snapshot`` services as a privileged source."""

    def __init__(
        self,
        state_client: Any,
        snapshot_client: Any,
        call: Callable[[Any, Any, float], Any],
        timeout_s: float = 30.0,
    ) -> None:
        self.state_client = state_client
        self.snapshot_client = snapshot_client
        self.call = call
        self.timeout_s = timeout_s

    def state(self) -> PrivilegedState:
        resp = self.call(self.state_client, PrivilegedStateSrv.Request(), self.timeout_s)
        if resp is None or not resp.success:
            raise NotSupportedError(
                "privileged state unavailable: "
                + (resp.message if resp is not None else "the robot node did not answer")
            )
        return PrivilegedState.from_dict(json.loads(resp.state_json))

    def snapshot(self) -> str | None:
        resp = self.call(self.snapshot_client, Snapshot.Request(), self.timeout_s)
        return str(resp.snapshot_id) if resp is not None and resp.success else None
