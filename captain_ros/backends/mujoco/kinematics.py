"""Planning kinematics of one arm over a private ``MjData`` (never touches the live state).

Used by the PiPER rigs (MuJoCo backend, the hardware twin) and, through
:class:`~captain_ros.backends.robosuite.kinematics.RobosuiteKinematics` (a tool frame turned from
the grip site's and a shifted world origin), by robosuite's arms. ``fk`` and ``jacobian``
evaluate the tool site (PiPER: ``<p>tcp``); the Jacobian is MuJoCo's world-frame
``mj_jacSite`` restricted to the arm's six joints (rows ``[linear; angular]``). ``collisions``
places the given arms (others at their live configuration) and lists robot-self, arm-arm and
robot-static (table, fixtures welded to the world) penetrations; movable task bodies (free objects,
drawers, doors) are ignored because touching them is the force guard's business.
"""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from captain_ros.backends.mujoco.model import ArmIndex
from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.core.geometry import Pose, as_vector, matrix_to_quat

PENETRATION_TOL_M = 1e-4


class MujocoKinematics:
    """:class:`~captain_ros.backends.base.Kinematics` of ``arm`` on a compiled rig model."""

    site_to_tool: np.ndarray | None = None
    """Rotation of the tool frame in the tool site's frame (``None``: the site's own frame)."""

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
        self.joint_names: tuple[str, ...] = arm.joint_names
        self._n = len(arm.joint_names)
        self.origin_m = np.zeros(3)
        """The model's world position of the backend's world origin [m] (robosuite: the table)."""
        self._cache_ok = self._com_ok = False
        collidable = [
            g for g in range(model.ngeom) if model.geom_contype[g] or model.geom_conaffinity[g]
        ]
        gb = model.geom_bodyid
        self._own_geoms = [g for g in collidable if int(gb[g]) in arm.body_ids]
        own_base = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, f"{arm.prefix}base_link")
        self._obstacle_geoms = [
            g
            for g in collidable
            if int(gb[g]) not in arm.body_ids
            and int(gb[g]) != own_base
            and (int(gb[g]) in robot_bodies or int(gb[g]) in self._static)
            and model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE
        ]
        self._cache_q = np.zeros(self._n)
        self._cache_live = np.zeros(model.nq)

    def _set(self, q: np.ndarray, com: bool = False) -> None:
        """Load the live configuration with this arm at ``q`` and run forward kinematics.

        Starting from the live state keeps results independent of earlier queries (bit-exact
        replays); repeated queries at the same ``q`` reuse the previous evaluation.
        """
        q = np.asarray(q, dtype=float)
        if q.shape != (self._n,) or not np.all(np.isfinite(q)):
            q = as_vector(q, self._n, "q")
            raise InvalidArgumentError(f"q must be {self._n} finite numbers, got {q.tolist()}")
        live = self._live.qpos
        if not (
            self._cache_ok
            and np.array_equal(q, self._cache_q)
            and np.array_equal(live, self._cache_live)
        ):
            self._data.qpos[:] = live
            self._data.qpos[self._arm.qpos_adr] = q
            mujoco.mj_kinematics(self._model, self._data)
            self._cache_q = q.copy()
            self._cache_live = live.copy()
            self._cache_ok = True
            self._com_ok = False
        if com and not self._com_ok:
            mujoco.mj_comPos(self._model, self._data)
            self._com_ok = True

    def fk(self, q: np.ndarray) -> Pose:
        """Tool pose in the world frame for joint positions ``q`` [rad]."""
        self._set(q)
        s = self._arm.tcp_site
        return self._pose(self._data.site_xpos[s], self._data.site_xmat[s])

    def _pose(self, site_xpos: np.ndarray, site_xmat: np.ndarray) -> Pose:
        """The tool pose from the tool site's position and (9,) rotation matrix."""
        return Pose(site_xpos.copy(), matrix_to_quat(site_xmat.reshape(3, 3)))

    def fk_matrix(self, q: np.ndarray) -> np.ndarray:
        """4x4 tool pose in the world frame (hot path of IK)."""
        self._set(q)
        t = np.eye(4)
        r = self._data.site_xmat[self._arm.tcp_site].reshape(3, 3)
        t[:3, :3] = r if self.site_to_tool is None else r @ self.site_to_tool
        t[:3, 3] = self._data.site_xpos[self._arm.tcp_site] - self.origin_m
        return t

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """(6, n) world-frame tool Jacobian: rows ``[linear (m/rad); angular (rad/rad)]``."""
        self._set(q, com=True)
        mujoco.mj_jacSite(self._model, self._data, self._jacp, self._jacr, self._arm.tcp_site)
        dof = self._arm.dof_adr
        return np.vstack([self._jacp[:, dof], self._jacr[:, dof]])

    def _n_of(self, arm: str) -> int:
        return len(self._arms[arm].joint_names)

    def clearance_m(self, q_by_arm: Mapping[str, np.ndarray], distmax_m: float = 0.3) -> float:
        """Smallest distance [m] between this arm's geoms and the static scene or the other arms
        (capped at ``distmax_m``; 0 when touching). Task objects are ignored."""
        d = self._data
        self._cache_ok = False
        d.qpos[:] = self._live.qpos
        for name, q in q_by_arm.items():
            d.qpos[self._arms[name].qpos_adr] = as_vector(q, self._n_of(name), f"q[{name}]")
        mujoco.mj_kinematics(self._model, d)
        m = self._model
        fromto = np.zeros(6)
        best = distmax_m
        for g1 in self._own_geoms:
            for g2 in self._obstacle_geoms:
                dist = mujoco.mj_geomDistance(m, d, g1, g2, distmax_m, fromto)
                best = min(best, dist)
        return max(0.0, float(best))

    def collisions(self, q_by_arm: Mapping[str, np.ndarray]) -> list[str]:
        """Colliding pairs ``"bodyA<->bodyB"`` at this configuration; ``[]`` when collision-free."""
        d = self._data
        self._cache_ok = False
        d.qpos[:] = self._live.qpos
        for name, q in q_by_arm.items():
            if name not in self._arms:
                raise UnknownNameError("arm", name, list(self._arms))
            qv = as_vector(q, self._n_of(name), f"q[{name}]")
            if not np.all(np.isfinite(qv)):
                raise InvalidArgumentError("q must be finite")
            d.qpos[self._arms[name].qpos_adr] = qv
        mujoco.mj_kinematics(self._model, d)
        mujoco.mj_comPos(self._model, d)
        mujoco.mj_collision(self._model, d)
        out: list[str] = []
        for i in range(d.ncon):
            c = d.contact[i]
            if c.dist > -PENETRATION_TOL_M:
                continue
            b1 = int(self._model.geom_bodyid[c.geom1])
            b2 = int(self._model.geom_bodyid[c.geom2])
            r1, r2 = b1 in self._robot, b2 in self._robot
            if not (r1 or r2):
                continue
            other_ok = (r1 and r2) or (b2 if r1 else b1) in self._static
            if other_ok:
                pair = f"{self._model.body(b1).name}<->{self._model.body(b2).name}"
                if pair not in out:
                    out.append(pair)
        return out
