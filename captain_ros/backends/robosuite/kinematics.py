"""Planning kinematics of one robosuite arm over a private ``MjData`` (never the live state).

The tool point is robosuite's own grip site (``gripper0_right_grip_site``, between the finger
pads); the tool frame is that site's frame turned 90 deg about its z axis so that, as on the PiPER
rig, z = approach and y = jaw closing axis (the site's x): a tool pointing straight down is the
quaternion (0, 1, 0, 0) up to a yaw. ``jacobian`` is MuJoCo's world-frame ``mj_jacSite``
over the arm's joints (rows ``[linear; angular]``). ``collisions`` lists robot-self, arm-arm and
robot-static penetrations (table, mount, fixtures welded to the world); task objects (free bodies,
the door) are the force guard's business.
"""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from captain_ros.backends.mujoco.model import ArmIndex
from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.core.geometry import Pose, matrix_to_quat

PENETRATION_TOL_M = 1e-4
SITE_TO_TOOL = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
"""Rotation of the tool frame in the grip-site frame (+90 deg about z: tool x = site y,
tool y = -site x = the closing axis)."""


def tool_pose(site_xpos: np.ndarray, site_xmat: np.ndarray) -> Pose:
    """World pose of the tool frame from the grip site's position and (9,) rotation matrix."""
    r = site_xmat.reshape(3, 3) @ SITE_TO_TOOL
    return Pose.trusted(np.array(site_xpos, dtype=float), matrix_to_quat(r))


class RobosuiteKinematics:
    """:class:`~captain_ros.backends.base.Kinematics` of one arm of a robosuite model."""

    def __init__(
        self,
        model: mujoco.MjModel,
        live: mujoco.MjData,
        arm: ArmIndex,
        arms: Mapping[str, ArmIndex],
        robot_bodies: frozenset[int],
    ) -> None:
        self._model = model
        self._live = live
        self._arm = arm
        self._arms = dict(arms)
        self._data = mujoco.MjData(model)
        self._robot = robot_bodies
        self._static = frozenset(int(b) for b in range(model.nbody) if model.body_weldid[b] == 0)
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))
        self._n = len(arm.joint_names)
        self.joint_names: tuple[str, ...] = arm.joint_names
        self.origin_m = np.zeros(3)
        """robosuite's world position of the backend's world origin (set by the backend)."""

    def _q(self, q: np.ndarray, name: str = "q") -> np.ndarray:
        v = np.asarray(q, dtype=float).reshape(-1)
        if v.shape != (self._n,) or not np.all(np.isfinite(v)):
            raise InvalidArgumentError(f"{name} must be {self._n} finite numbers, got {v.tolist()}")
        return v

    def _set(self, q: np.ndarray) -> None:
        d = self._data
        d.qpos[:] = self._live.qpos
        d.qpos[self._arm.qpos_adr] = self._q(q)
        mujoco.mj_kinematics(self._model, d)

    def fk(self, q: np.ndarray) -> Pose:
        """Tool pose in the world frame for joint positions ``q`` [rad]."""
        self._set(q)
        s = self._arm.tcp_site
        return tool_pose(self._data.site_xpos[s] - self.origin_m, self._data.site_xmat[s])

    def fk_matrix(self, q: np.ndarray) -> np.ndarray:
        """4x4 tool pose in the world frame."""
        self._set(q)
        t = np.eye(4)
        t[:3, :3] = self._data.site_xmat[self._arm.tcp_site].reshape(3, 3) @ SITE_TO_TOOL
        t[:3, 3] = self._data.site_xpos[self._arm.tcp_site] - self.origin_m
        return t

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """(6, n) world-frame tool Jacobian: rows ``[linear (m/rad); angular (rad/rad)]``."""
        self._set(q)
        mujoco.mj_comPos(self._model, self._data)
        mujoco.mj_jacSite(self._model, self._data, self._jacp, self._jacr, self._arm.tcp_site)
        dof = self._arm.dof_adr
        return np.vstack([self._jacp[:, dof], self._jacr[:, dof]])

    def collisions(self, q_by_arm: Mapping[str, np.ndarray]) -> list[str]:
        """Colliding pairs ``"bodyA<->bodyB"`` at this configuration; ``[]`` when collision-free."""
        m, d = self._model, self._data
        d.qpos[:] = self._live.qpos
        for name, q in q_by_arm.items():
            if name not in self._arms:
                raise UnknownNameError("arm", name, list(self._arms))
            d.qpos[self._arms[name].qpos_adr] = self._q(q, f"q[{name}]")
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_collision(m, d)
        out: list[str] = []
        for i in range(d.ncon):
            c = d.contact[i]
            if c.dist > -PENETRATION_TOL_M:
                continue
            b1, b2 = int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])
            r1, r2 = b1 in self._robot, b2 in self._robot
            if not (r1 or r2):
                continue
            if (r1 and r2) or (b2 if r1 else b1) in self._static:
                pair = f"{m.body(b1).name}<->{m.body(b2).name}"
                if pair not in out:
                    out.append(pair)
        return out
