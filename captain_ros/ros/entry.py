"""Entry points of the ROS executables (pip console scripts and colcon's ``lib/captain_ros``).

The node module is imported inside the guard: a node interrupted while it is still importing
(``ros2 launch`` shutting the graph down because another process failed) exits quietly with status
130 instead of printing a ``KeyboardInterrupt`` traceback over the real reason.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

EXIT_REFUSED = 78
"""Exit status of a node process that refused to start (a bad parameter, a backend that cannot be
configured, an unusable key file: one line on stderr), as sysexits' EX_CONFIG. The launch file
stops the graph on it instead of respawning the process; any other death of a respawned process
(a signal, an uncaught exception) is respawned."""

NODES = {
    "captain_robot_stack": "captain_ros.ros.robot_stack",
    "captain_policy": "captain_ros.ros.policy_node",
    "captain_recorder": "captain_ros.ros.recorder_node",
    "captain_up": "captain_ros.ros.up",
    "captain_humanoid": "captain_ros.ros.humanoid_node",
    "captain_coevolve": "captain_ros.research.ros.humanoid_coevolve_node",
    "captain_arm_driver": "captain_ros.ros.arm_bridge.driver_node",
}
"""Executable name -> module whose ``main(argv)`` runs it (CMakeLists.txt lists the same)."""


def run(module: str, argv: Sequence[str] | None = None) -> int:
    """Import ``module`` and run its ``main``; 130 when interrupted on the way."""
    try:
        main = importlib.import_module(module).main
        return int(main(None if argv is None else list(argv)) or 0)
    except KeyboardInterrupt:
        return 130


def robot_stack() -> int:
    return run(NODES["captain_robot_stack"])


def policy() -> int:
    return run(NODES["captain_policy"])


def recorder() -> int:
    return run(NODES["captain_recorder"])


def up() -> int:
    return run(NODES["captain_up"])


def humanoid() -> int:
    return run(NODES["captain_humanoid"])


def coevolve() -> int:
    return run(NODES["captain_coevolve"])


def arm_driver() -> int:
    return run(NODES["captain_arm_driver"])


if __name__ == "__main__":  # python -m captain_ros.ros.entry EXECUTABLE [args]
    raise SystemExit(run(NODES[sys.argv[1]], sys.argv[2:]))
