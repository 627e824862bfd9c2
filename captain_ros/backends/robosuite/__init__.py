"""robosuite's tasks behind the Backend interface (optional extra; docs/robosuite.md)."""

from captain_ros.backends.robosuite.scene import RobosuiteScene

__all__ = ["RobosuiteScene"]
