"""Which arm a motion call moves when the policy does not say (dual rig routing rule)."""

from __future__ import annotations

from typing import Any

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core.errors import UnknownNameError


def route_arm(
    backend: Backend, arm: Any, target: np.ndarray | None = None, last_arm: str | None = None
) -> str:
    """The arm named by ``arm`` (validated), else: the only arm; the one arm holding an object;
    the arm whose base is nearest to ``target`` [m]; the arm that moved last; the first arm."""
    names = backend.spec.arm_names
    if arm is not None:
        if not isinstance(arm, str) or arm not in names:
            raise UnknownNameError("arm", arm, list(names))
        return arm
    if len(names) == 1:
        return names[0]
    holders = [a for a in names if backend.gripper(a).holding]
    if len(holders) == 1:
        return holders[0]
    if target is not None:
        d = [
            np.linalg.norm(backend.spec.arm(a).base_pose.position_m[:2] - target[:2]) for a in names
        ]
        return names[int(np.argmin(d))]
    return last_arm or names[0]
