"""The kinematic twin: the MuJoCo PiPER model (no task objects) posed at the measured joints.

It serves planning (:class:`MujocoKinematics`: FK, Jacobian, self/arm-arm/table collisions, so
``check_motion`` and ``preview_motion`` work as in simulation), the wrist cameras' poses, the
controller cross-check (twin flange vs the arm's own reported pose) and, from
:class:`~captain_ros.backends.twin.MujocoTwin`, the gravity torques that contact detection
subtracts from the measured efforts.
"""

from __future__ import annotations

import mujoco
import numpy as np

from captain_ros.backends.mujoco import model as rigmodel
from captain_ros.backends.mujoco.kinematics import MujocoKinematics
from captain_ros.backends.mujoco.model import ArmIndex
from captain_ros.backends.twin import MujocoTwin
from captain_ros.core.types import RobotSpec

TCP_FROM_FLANGE_Z_M = 0.13
"""The tool point lies this far beyond the flange along the tool z axis [m] (scripts/generate_urdf.py)."""


class KinematicTwin(MujocoTwin):
    """Twin of rig ``piper`` or ``piper_dual``; :meth:`update` poses one arm."""

    def __init__(self, rig: str) -> None:
        self.rig = rig
        self.model = rigmodel.load_model(rig, None)
        self.data = mujoco.MjData(self.model)
        m = self.model
        key = m.key("home").id
        self.data.qpos[:] = m.key_qpos[key]
        self.arms: dict[str, ArmIndex] = {
            a: rigmodel.index_arm(m, a, p) for a, p in rigmodel.ARM_PREFIXES[rig].items()
        }
        self.base = np.eye(4)  # the rig model's world is the captain world
        self.spec: RobotSpec = rigmodel.robot_spec(rig, self.arms)
        robot = set().union(*(a.body_ids for a in self.arms.values()))
        robot |= {m.body(f"{a.prefix}base_link").id for a in self.arms.values()}
        self.kin = {
            n: MujocoKinematics(m, self.data, a, self.arms, frozenset(robot))
            for n, a in self.arms.items()
        }
        self._ready()

    def update(self, arm: str, q_rad: np.ndarray, jaw_m: float | None = None) -> None:
        """Pose ``arm`` at the measured joints (and jaw opening [m])."""
        a = self.arms[arm]
        with self.lock:
            self.data.qpos[a.qpos_adr] = q_rad
            if jaw_m is not None:
                self.data.qpos[a.finger_qpos_adr] = np.clip(
                    jaw_m / 2, 0.0, rigmodel.FINGER_STROKE_M
                )
            mujoco.mj_kinematics(self.model, self.data)

    def flange_matrix(self, arm: str) -> np.ndarray:
        """World 4x4 pose of the flange (link6 origin)."""
        t = self.tcp_matrix(arm)
        t[:3, 3] -= t[:3, 2] * TCP_FROM_FLANGE_Z_M
        return t
