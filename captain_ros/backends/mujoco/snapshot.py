"""A picklable, restorable snapshot of a MuJoCo-physics backend (MuJoCo, robosuite).

Holds MuJoCo's full integration state (``mj_getState(mjSTATE_INTEGRATION)``: time, qpos, qvel,
actuator activations, warm-start accelerations, controls, applied forces, mocap, equality flags)
plus everything on the Python side that influences what happens next: arm joint targets, gripper
commands, the e-stop latch, ever-held flags and the numpy ``bit_generator`` state. Restoring it
and replaying the same commands is bit-identical, in the same process or another one.

:class:`SimState` is what both backends share around it: taking and loading the snapshot, the
e-stop latch (a restore never releases a latched e-stop) and the simulation clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from captain_ros.core.errors import InvalidArgumentError

STATE = mujoco.mjtState.mjSTATE_INTEGRATION
"""The part of MuJoCo's state a snapshot holds (``mj_getState``)."""


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


class SimState:
    """Snapshot, e-stop latch and clock of a backend whose world is a live ``MjData`` (the MuJoCo
    and robosuite backends set these attributes; see :class:`MujocoSnapshot` for what they mean)."""

    model: mujoco.MjModel
    data: mujoco.MjData
    rng: np.random.Generator
    _model_key: str
    _targets: dict[str, np.ndarray]
    _grip_cmd: dict[str, float]
    _estop: bool
    _estop_reason: str
    _ever_held: dict[str, bool]
    _ticks: int

    def time_s(self) -> float:
        return float(self.data.time)

    @property
    def estopped(self) -> bool:
        return self._estop

    def _take_snapshot(self, extra: dict[str, Any] | None = None) -> MujocoSnapshot:
        state = np.empty(mujoco.mj_stateSize(self.model, STATE))
        mujoco.mj_getState(self.model, self.data, state, STATE)
        return MujocoSnapshot(
            model_key=self._model_key,
            physics=state,
            targets_rad={n: q.copy() for n, q in self._targets.items()},
            gripper_cmd_m=dict(self._grip_cmd),
            estop=self._estop,
            estop_reason=self._estop_reason,
            ever_held=dict(self._ever_held),
            rng_state=dict(self.rng.bit_generator.state),
            ticks=self._ticks,
            extra=extra or {},
        )

    def _load_snapshot(self, snapshot: object) -> MujocoSnapshot:
        """Physics and the Python side from ``snapshot`` (the backend then refreshes what derives
        from them); a snapshot of another scene or model is refused."""
        if not isinstance(snapshot, MujocoSnapshot) or snapshot.model_key != self._model_key:
            raise InvalidArgumentError("snapshot was taken on a different scene/model")
        mujoco.mj_setState(self.model, self.data, snapshot.physics, STATE)
        self._targets = {n: q.copy() for n, q in snapshot.targets_rad.items()}
        self._grip_cmd = dict(snapshot.gripper_cmd_m)
        if snapshot.estop and not self._estop:  # restoring never releases a latched e-stop
            self._estop, self._estop_reason = True, snapshot.estop_reason
        self._ever_held = dict(snapshot.ever_held)
        self.rng.bit_generator.state = snapshot.rng_state
        self._ticks = snapshot.ticks
        return snapshot
