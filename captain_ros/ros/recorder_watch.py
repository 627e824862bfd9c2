"""Follows the recorder node's latched status to report an episode's bag path."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from rclpy.node import Node
from std_msgs.msg import String

from captain_ros.ros.estop import LATCHED_QOS

STATUS_TOPIC = "/captain/recorder/status"


class RecorderWatch:
    """Subscribes to ``/captain/recorder/status``; waits on its updates (bounded, no polling sleeps)."""

    def __init__(self, node: Node, wait_s: float, callback_group: Any = None) -> None:
        self.node = node
        self.wait_s = float(wait_s)
        self.status: dict[str, Any] = {}
        self._event = threading.Event()
        node.create_subscription(String, STATUS_TOPIC, self._on_status, LATCHED_QOS,
                                 callback_group=callback_group)

    def _on_status(self, msg: String) -> None:
        self.status = json.loads(msg.data)
        self._event.set()

    def _wait(self, done: Any) -> bool:
        deadline = time.monotonic() + self.wait_s
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._event.wait(min(left, 0.1))
            self._event.clear()
        return True

    def bag_opened(self, episode_id: str) -> str:
        """Path of the bag the recorder opened for ``episode_id`` ('' when no recorder runs)."""
        if not self.status and self.node.count_publishers(STATUS_TOPIC) == 0:
            return ""  # no recorder in the graph
        # a recorder is known: its latched status may still be on its way (just discovered)
        ok = self._wait(lambda: self.status.get("episode_id") == episode_id)
        return str(self.status.get("open", "")) if ok else ""

    def bag_closed(self, path: str) -> str:
        """``path`` once the recorder reports it closed (or after the wait)."""
        if path:
            self._wait(lambda: self.status.get("last_closed") == path)
        return path
