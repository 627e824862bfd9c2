"""One arm's gripper controller action, as a ros2_control gripper controller serves it.

``/<prefix>gripper_controller/gripper_cmd`` (``control_msgs/GripperCommand``): jaw gap [m] with
a force limit [N]. The goal succeeds when the gap is reached or the jaw stalls (on an object), or
after a timeout (:mod:`captain_ros.ros.arm_bridge.gripper_watch`); a newer command to the same
gripper aborts it, and cancel ends it where the jaw is.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from control_msgs.action import GripperCommand
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node

from captain_ros.ros.arm_bridge.driver_params import controller_prefix
from captain_ros.ros.arm_bridge.gripper_watch import GripWatch

POLL_S = 0.02
"""How often the jaw gap is read while a command runs [s]."""


class GripperServer:
    """The ``GripperCommand`` action of the gripper of ``arm`` of a simulated ``driver``."""

    def __init__(self, node: Node, driver: Any, arm: str, group: CallbackGroup) -> None:
        self.driver, self.arm = driver, arm
        self._lock = threading.Lock()
        self._newest = 0  # the token of the newest command
        self.server = ActionServer(
            node,
            GripperCommand,
            f"/{controller_prefix(arm)}gripper_controller/gripper_cmd",
            execute_callback=self.execute,
            cancel_callback=lambda _r: CancelResponse.ACCEPT,
            callback_group=group,
        )

    def execute(self, handle: Any) -> Any:
        cmd = handle.request.command
        with self._lock:
            self._newest += 1
            token = self._newest
        self.driver.command_gripper(self.arm, float(cmd.position), float(cmd.max_effort))
        result = GripperCommand.Result()
        watch = GripWatch(cmd.position, self.driver.opening_m(self.arm), time.monotonic())
        while True:
            time.sleep(POLL_S)
            progress = watch.update(self.driver.opening_m(self.arm), time.monotonic())
            result.position = progress.position_m
            result.reached_goal, result.stalled = progress.reached, progress.stalled
            if handle.is_cancel_requested:
                handle.canceled()
                return result
            if self._newest != token:  # preempted by a newer command
                handle.abort()
                return result
            if progress.done:
                handle.succeed()
                return result
