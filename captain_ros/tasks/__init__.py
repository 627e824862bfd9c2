"""Task suite: seeded scenes, instructions, success predicates, milestones, critic features, gates.

``TASKS`` maps each task name to an instance; ``get_task(name)`` raises
:class:`~captain_ros.core.errors.UnknownNameError` listing the valid names. robosuite's tasks
(:mod:`captain_ros.tasks.robosuite_suite`, names ``robosuite_*``) are not in ``TASKS`` (they run
on ``--backend robosuite`` only); ``get_task(name, "robosuite")`` also takes their short names
(``lift``) and :func:`task_names` lists a backend's tasks.
"""

from __future__ import annotations

from captain_ros.core.errors import UnknownNameError
from captain_ros.tasks.base import Task
from captain_ros.tasks.features import FEATURE_NAMES, N_FEATURES
from captain_ros.tasks.insertion import Insertion
from captain_ros.tasks.open_drawer import OpenDrawer
from captain_ros.tasks.pick_place import PickPlace
from captain_ros.tasks.restack import Restack
from captain_ros.tasks.stack import Stack
from captain_ros.tasks.tracker import EpisodeTracker
from captain_ros.tasks.two_arm_lift import TwoArmLift

TASKS: dict[str, Task] = {
    t.name: t for t in (PickPlace(), Stack(), Restack(), OpenDrawer(), TwoArmLift(), Insertion())
}


def get_task(name: str, backend: str | None = None) -> Task:
    """The registered task ``name`` (of ``backend``'s tasks where that has its own)."""
    if backend == "robosuite" or (backend is None and name.startswith("robosuite_")):
        from captain_ros.tasks.robosuite_suite import robosuite_task

        return robosuite_task(name)
    if name not in TASKS:
        raise UnknownNameError("task", name, sorted(TASKS))
    return TASKS[name]


def task_names(backend: str | None = None) -> list[str]:
    """The tasks ``--task all`` means on ``backend``."""
    if backend == "robosuite":
        from captain_ros.tasks.robosuite_suite import ROBOSUITE_TASKS

        return list(ROBOSUITE_TASKS)
    return list(TASKS)


__all__ = [
    "FEATURE_NAMES",
    "N_FEATURES",
    "TASKS",
    "EpisodeTracker",
    "Task",
    "get_task",
    "task_names",
]
