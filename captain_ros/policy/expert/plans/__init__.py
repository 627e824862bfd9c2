"""One plan per task: a generator of the expert's requests that reacts to its own notes.

Each plan perceives, measures, grasps with guarded motion, verifies with fresh measurements and
only then calls ``finish()``; a failed verification leads to one corrective attempt. Tolerances
are those TASK.md states for the task (the expert verifies against a tighter margin). A plan module
holds its host-side plans (``plan`` from the start, ``resume`` from wherever the task stands) and
the session functions only that task uses.
"""

from __future__ import annotations

from collections.abc import Callable

from captain_ros.policy.expert.cells import Plan
from captain_ros.policy.expert.plans import (
    insertion,
    open_drawer,
    pick_place,
    restack,
    robosuite,
    robosuite_door,
    robosuite_nut,
    robosuite_pot,
    stack,
    two_arm_lift,
)

PLANS: dict[str, Callable[[str], Plan]] = {
    "pick_place": pick_place.plan,
    "stack": stack.plan,
    "restack": restack.plan,
    "open_drawer": open_drawer.plan,
    "two_arm_lift": two_arm_lift.plan,
    "insertion": insertion.plan,
    "robosuite_lift": robosuite.lift,
    "robosuite_stack": robosuite.stack,
    "robosuite_two_arm_lift": robosuite_pot.plan,
    "robosuite_door": robosuite_door.plan,
    "robosuite_nut_assembly_square": robosuite_nut.plan,
}
"""Task name -> plan(instruction): the whole task from its start."""

RESUME: dict[str, Callable[[str], Plan]] = {
    "pick_place": pick_place.resume,
    "stack": stack.resume,
    "restack": restack.resume,
    "open_drawer": open_drawer.resume,
    "two_arm_lift": two_arm_lift.resume,
    "insertion": insertion.resume,
    "robosuite_lift": robosuite.lift_resume,
    "robosuite_stack": robosuite.stack_resume,
    "robosuite_two_arm_lift": robosuite_pot.resume,
    "robosuite_door": robosuite_door.resume,
    "robosuite_nut_assembly_square": robosuite_nut.resume,
}
"""Task name -> resume(instruction): from wherever the task stands, told by fresh measurements
(after a lost session, or taking over from another policy)."""

__all__ = ["PLANS", "RESUME"]
