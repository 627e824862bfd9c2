"""What every hardware rig's kinematic twin shares: a MuJoCo model posed at the measured joints.

The PiPER twin (:class:`~captain_ros.backends.piper.twin.KinematicTwin`, the project's own rig
model) and the ROS 2 arm twin (:class:`~captain_ros.backends.ros_arm.twin.ModelTwin`, the user's
URDF/MJCF placed at a base pose) differ in how they load and index the model and pose a gripper;
the tool pose, the gravity torques and the tool-force estimate that contact detection uses are
this one implementation.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Protocol

import mujoco
import numpy as np


class TwinArm(Protocol):
    """The indices of one arm in the twin's model."""

    @property
    def qpos_adr(self) -> np.ndarray: ...

    @property
    def dof_adr(self) -> np.ndarray: ...

    @property
    def tcp_site(self) -> int: ...


class MujocoTwin:
    """Base of the hardware twins: ``model``, ``data`` (the measured pose), ``arms`` (name ->
    :class:`TwinArm`) and ``base`` (the captain world from the model's world, 4x4) are set by the
    subclass before it calls :meth:`_ready`."""

    model: mujoco.MjModel
    data: mujoco.MjData
    arms: Mapping[str, TwinArm]
    base: np.ndarray

    def _ready(self) -> None:
        """Scratch data of the gravity and force queries; forward kinematics of the pose."""
        self._grav = mujoco.MjData(self.model)
        self._jacp = np.zeros((3, self.model.nv))
        self.lock = threading.Lock()
        mujoco.mj_kinematics(self.model, self.data)

    def _captain(self, xmat: np.ndarray, xpos: np.ndarray, i: int) -> np.ndarray:
        """Captain-world 4x4 pose of element ``i`` of the pose's frames ``xmat``/``xpos``."""
        t = np.eye(4)
        with self.lock:
            t[:3, :3] = xmat[i].reshape(3, 3)
            t[:3, 3] = xpos[i]
        return self.base @ t

    def tcp_matrix(self, arm: str) -> np.ndarray:
        """Captain-world 4x4 pose of the tool point at the last measured pose."""
        return self._captain(self.data.site_xmat, self.data.site_xpos, self.arms[arm].tcp_site)

    def gravity_torque_nm(self, arm: str, q_rad: np.ndarray) -> np.ndarray:
        """Joint torques [N m] that hold ``arm`` still against gravity at ``q_rad``."""
        a, d = self.arms[arm], self._grav
        with self.lock:
            d.qpos[:] = self.data.qpos
        d.qpos[a.qpos_adr] = q_rad
        d.qvel[:] = 0.0
        mujoco.mj_forward(self.model, d)
        return d.qfrc_bias[a.dof_adr].copy()

    def tool_force_n(self, arm: str, q_rad: np.ndarray, tau_ext_nm: np.ndarray) -> np.ndarray:
        """Least-squares external force at the tool point [N, captain frame] explaining the
        joint torques ``tau_ext_nm`` (``tau = J_lin^T F``) at ``q_rad``."""
        a, d = self.arms[arm], self._grav
        d.qpos[a.qpos_adr] = q_rad
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_comPos(self.model, d)
        mujoco.mj_jacSite(self.model, d, self._jacp, None, a.tcp_site)
        f, *_ = np.linalg.lstsq(self._jacp[:, a.dof_adr].T, tau_ext_nm, rcond=1e-3)
        return self.base[:3, :3] @ f


__all__ = ["MujocoTwin", "TwinArm"]
