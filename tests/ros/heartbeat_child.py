"""A process that only beats: a Heartbeat of ROLE, its instance id printed (test_liveness_wait.py)."""

from __future__ import annotations

import sys

import rclpy
from rclpy.node import Node

from captain_ros.ros.liveness import Heartbeat


def main() -> None:
    rclpy.init()
    node = Node("heartbeat_child")
    beat = Heartbeat(node, sys.argv[1])
    print(beat.instance, flush=True)
    rclpy.spin(node)


if __name__ == "__main__":
    main()
