"""The kinematic twin: the MuJoCo PiPER model (no task objects) posed at the measured joints.

It serves planning (:class:`MujocoKinematics`: FK, Jacobian, self/arm-arm/table collisions, so
``check_motion`` and ``preview_motion`` work as in simulation), the wrist cameras' poses, the
controller cross-check (twin flange vs the arm's own reported pose) and the gravity torques that
contact detection subtracts from the measured efforts.
"""

from __future__ import annotations

import threading

import mujoco
import numpy as np

from captain_ros.backends.mujoco import model as rigmodel
from captain_ros.backends.mujoco.kinematics import MujocoKinematics
from captain_ros.core.types import RobotSpec

TCP_FROM_FLANGE_Z_M = 0.13
"""The tool point lies this far beyond the flange along the tool z axis [m] (urdf/generate.py)."""


class KinematicTwin:
    """Twin of rig ``piper`` or ``piper_dual``; :meth:`update` poses one arm."""

    def __init__(self, rig: str) -> None:
        self.rig = rig
        self.model = rigmodel.load_model(rig, None)
        self.data = mujoco.MjData(self.model)
        m = self.model
        key = m.key("home").id
        self.data.qpos[:] = m.key_qpos[key]
        self.arms = {a: rigmodel.index_arm(m, a, p) for a, p in rigmodel.ARM_PREFIXES[rig].items()}
        self.spec: RobotSpec = rigmodel.robot_spec(rig, self.arms)
        robot = set().union(*(a.body_ids for a in self.arms.values()))
        robot |= {m.body(f"{a.prefix}base_link").id for a in self.arms.values()}
        self.kin = {n: MujocoKinematics(m, self.data, a, self.arms, frozenset(robot))
                    for n, a in self.arms.items()}
        self._grav = mujoco.MjData(m)
        self._jacp = np.zeros((3, m.nv))
        self.lock = threading.Lock()
        mujoco.mj_kinematics(m, self.data)

    def update(self, arm: str, q_rad: np.ndarray, jaw_m: float | None = None) -> None:
        """Pose ``arm`` at the measured joints (and jaw opening [m])."""
        a = self.arms[arm]
        with self.lock:
            self.data.qpos[a.qpos_adr] = q_rad
            if jaw_m is not None:
                self.data.qpos[a.finger_qpos_adr] = np.clip(jaw_m / 2, 0.0, rigmodel.FINGER_STROKE_M)
            mujoco.mj_kinematics(self.model, self.data)

    def tcp_matrix(self, arm: str) -> np.ndarray:
        """World 4x4 pose of the tool point."""
        s = self.arms[arm].tcp_site
        t = np.eye(4)
        with self.lock:
            t[:3, :3] = self.data.site_xmat[s].reshape(3, 3)
            t[:3, 3] = self.data.site_xpos[s]
        return t

    def flange_matrix(self, arm: str) -> np.ndarray:
        """World 4x4 pose of the flange (link6 origin)."""
        t = self.tcp_matrix(arm)
        t[:3, 3] -= t[:3, 2] * TCP_FROM_FLANGE_Z_M
        return t

    def gravity_torque_nm(self, arm: str, q_rad: np.ndarray) -> np.ndarray:
        """Joint torques [N m] that hold ``arm`` still against gravity at ``q_rad``."""
        a, m, d = self.arms[arm], self.model, self._grav
        with self.lock:
            d.qpos[:] = self.data.qpos
        d.qpos[a.qpos_adr] = q_rad
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        return d.qfrc_bias[a.dof_adr].copy()

    def tool_force_n(self, arm: str, q_rad: np.ndarray, tau_ext_nm: np.ndarray) -> np.ndarray:
        """Least-squares external force at the tool point [N] explaining joint torques
        ``tau_ext_nm`` (``tau = J_lin^T F``) at ``q_rad``."""
        a, m, d = self.arms[arm], self.model, self._grav
        d.qpos[a.qpos_adr] = q_rad
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_jacSite(m, d, self._jacp, None, a.tcp_site)
        jt = self._jacp[:, a.dof_adr].T  # (6, 3)
        f, *_ = np.linalg.lstsq(jt, tau_ext_nm, rcond=1e-3)
        return f
