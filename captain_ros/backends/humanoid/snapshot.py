"""A picklable, restorable snapshot of a :class:`~captain_ros.backends.humanoid.sim.MujocoHumanoidPair`.

Holds MuJoCo's integration state (``mj_getState(mjSTATE_INTEGRATION)``) plus everything on the
Python side that influences what happens next: the locomotion states (references, commands and
their watchdog stamps, tracking errors, gait phase), the arm target ramps, the e-stop latch, the
fall latches, the numpy ``bit_generator`` state and the monitor window. Restoring it and replaying
the same commands is bit-identical, in the same process or another one (as
:class:`captain_ros.backends.mujoco.snapshot.MujocoSnapshot` for the arms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from captain_ros.backends.humanoid.locomotion import LocoState


@dataclass(frozen=True)
class HumanoidSnapshot:
    """Everything needed to continue the humanoid simulation exactly (pickle it freely)."""

    model_key: str
    physics: np.ndarray
    loco: dict[str, LocoState]
    ramps: dict[str, tuple[np.ndarray, np.ndarray, float, float]]
    estop: bool
    estop_reason: str
    fallen: dict[str, bool]
    rng_state: dict[str, Any]
    ticks: int
    monitor: dict[str, Any] = field(default_factory=dict)
    digest: str = ""

    def __post_init__(self) -> None:
        self.physics.setflags(write=False)
