"""The robot process: robot node + perception node sharing one backend, one executor.

``python -m captain_ros.ros.robot_stack --ros-args --params-file config/captain.yaml`` is what
the launch file starts for the robot side; the policy and recorder nodes run in their own
processes and talk to it over ROS.
"""

from __future__ import annotations

from typing import Any

from rclpy.node import Node

from captain_ros.ros.perception_node import PerceptionNode
from captain_ros.ros.robot_node import RobotNode
from captain_ros.ros.runner import bring_up, run_nodes


def make_robot_stack(
    backend: Any = None, robot_overrides: list[Any] | None = None, **node_kwargs: Any
) -> list[Node]:
    """Robot node (configured + active) and a perception node on its locked backend.

    ``robot_overrides`` are parameter overrides of the robot node; ``node_kwargs`` (e.g.
    ``context=``, ``cli_args=``) are passed to both nodes.
    """
    robot = RobotNode(backend=backend, parameter_overrides=robot_overrides or [], **node_kwargs)
    bring_up(robot)
    perception = PerceptionNode(robot.backend, **node_kwargs)
    robot.scene_listeners.append(perception.reset)
    robot.sim.perception_of = lambda: perception.perception  # snapshots cover its store too
    return [robot, perception]


def main(argv: list[str] | None = None) -> int:
    return run_nodes(argv, make_robot_stack, autostart=False)


if __name__ == "__main__":
    raise SystemExit(main())
