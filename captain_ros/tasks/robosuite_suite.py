"""The robosuite tasks by name: ``--task all`` and the short names under ``--backend robosuite``."""

from __future__ import annotations

from captain_ros.core.errors import UnknownNameError
from captain_ros.tasks.robosuite_fixtures import RobosuiteDoor, RobosuiteNutAssemblySquare
from captain_ros.tasks.robosuite_tasks import (
    RobosuiteLift,
    RobosuiteStack,
    RobosuiteTask,
    RobosuiteTwoArmLift,
)

ROBOSUITE_TASKS: dict[str, RobosuiteTask] = {
    t.name: t
    for t in (
        RobosuiteLift(),
        RobosuiteStack(),
        RobosuiteTwoArmLift(),
        RobosuiteDoor(),
        RobosuiteNutAssemblySquare(),
    )
}
SHORT_NAMES = {name.removeprefix("robosuite_"): name for name in ROBOSUITE_TASKS}
"""``lift`` -> ``robosuite_lift``, ..., ``nut_assembly_square`` -> ``robosuite_nut_assembly_square``."""


def robosuite_task(name: str) -> RobosuiteTask:
    """The robosuite task ``name`` (``lift`` or ``robosuite_lift``)."""
    full = SHORT_NAMES.get(name, name)
    if full not in ROBOSUITE_TASKS:
        raise UnknownNameError("robosuite task", name, sorted(SHORT_NAMES))
    return ROBOSUITE_TASKS[full]
