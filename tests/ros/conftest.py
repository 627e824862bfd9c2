"""pytest fixtures of the ROS tests (implemented in ros_fixtures.py and arm_bridge_helpers.py)."""

from arm_bridge_helpers import driver  # noqa: F401 - fixtures are looked up by name
from ros_fixtures import (  # noqa: F401 - fixtures are looked up by name
    _ros_process_env,
    child_process,
    domain_id,
    ros_context,
    spinner,
)
