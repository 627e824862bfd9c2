"""An rclpy ``ActionClient`` whose goal answer cannot be lost to a race.

rclpy 9.1.2 (the Kilted wheels this project pins; the newest on the index) carries a partial
backport of ros2/rclpy#1308 in ``ActionClient.send_goal_async``: it sends the goal and registers
its future under the client's lock, as the fix does, and then, outside the lock, registers a
second, fresh future under the same sequence number and returns that one. When the executor takes
the server's answer between the two registrations (the sending thread descheduled for a moment on
a busy machine), the answer completes the first future and the returned one never completes: the
caller sees no answer however long it waits. A CI run of the ROS arm bridge met exactly that ("no
answer from /arm_controller/follow_joint_trajectory within 10.00 s" mid-episode, e-stop latched);
``tests/ros/test_ros_action_client.py`` widens the window and shows both the loss and the fix.

:class:`ActionClient` overrides only ``send_goal_async``, with the body the fix intends: one
future, registered under the lock together with the send (the feedback callback too, before the
send, so no early feedback is dropped). Every other method is rclpy's. Drop this module when the
pinned rclpy's ``send_goal_async`` registers one future (the test above then says so).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.action import ActionClient as _RclpyActionClient
from rclpy.task import Future


class ActionClient(_RclpyActionClient[Any, Any, Any]):
    """rclpy's action client with a race-free ``send_goal_async`` (see the module docstring)."""

    def send_goal_async(
        self,
        goal: Any,
        feedback_callback: Callable[[Any], None] | None = None,
        goal_uuid: Any = None,
    ) -> Future[Any]:
        """Send ``goal``; the returned future completes with the goal handle once the server
        accepts or rejects it (rclpy's contract)."""
        if not isinstance(goal, self._action_type.Goal):
            raise TypeError(
                f"Expected goal type ({self._action_type.Goal}) but received ({type(goal)})"
            )
        request = self._action_type.Impl.SendGoalService.Request()
        request.goal_id = self._generate_random_uuid() if goal_uuid is None else goal_uuid
        request.goal = goal
        future: Future[Any] = Future()
        with self._lock:
            if feedback_callback is not None:
                self._feedback_callbacks[bytes(request.goal_id.uuid)] = feedback_callback
            sequence_number = self._client_handle.send_goal_request(request)
            if sequence_number in self._pending_goal_requests:
                raise RuntimeError(
                    f"Sequence ({sequence_number}) conflicts with pending goal request"
                )
            self._pending_goal_requests[sequence_number] = future
            self._goal_sequence_number_to_goal_id[sequence_number] = request.goal_id
            future.add_done_callback(self._remove_pending_goal_request)
            self.add_future(future)  # the executor waits on it
        return future
