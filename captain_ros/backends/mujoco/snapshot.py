"""A picklable, restorable snapshot of a :class:`MujocoBackend`.

Holds MuJoCo's full integration state (``mj_getState(mjSTATE_INTEGRATION)``: time, qpos, qvel,
actuator activations, warm-start accelerations, controls, applied forces, mocap, equality flags)
plus everything on the Python side that influences what happens next: arm joint targets, gripper
commands, the e-stop latch, ever-held flags and the numpy ``bit_generator`` state. Restoring it
and replaying the same commands is bit-identical, in the same process or another one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MujocoSnapshot:
    """Everything needed to continue a simulation exactly (pickle it freely)."""

    model_key: str
    physics: np.ndarray
    targets_rad: dict[str, np.ndarray]
    gripper_cmd_m: dict[str, float]
    estop: bool
    estop_reason: str
    ever_held: dict[str, bool]
    rng_state: dict[str, Any]
    ticks: int
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.physics.setflags(write=False)
