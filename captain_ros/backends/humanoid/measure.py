"""Measurements of the humanoid scene from MuJoCo data (indices, payload, contacts, tilt).

:class:`SceneIndex` resolves names once; the functions read one ``MjData`` without changing it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np

from captain_ros.backends.humanoid.mjcf import ARM_JOINTS, PAYLOAD_HALF_M, PREFIX, ROBOTS, SIDES

BASE_JOINTS = ("x", "y", "yaw", "height", "pitch", "roll")


@dataclass
class RobotIndex:
    """Indices of one robot in the compiled model."""

    name: str
    qadr: dict[str, int] = field(default_factory=dict)  # base joint -> qpos address
    dadr: dict[str, int] = field(default_factory=dict)  # base joint -> dof address
    act: dict[str, int] = field(default_factory=dict)  # base joint -> actuator id
    arm_qadr: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    arm_act: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    arm_joint_names: tuple[str, ...] = ()
    arm_lower: np.ndarray = field(default_factory=lambda: np.zeros(0))
    arm_upper: np.ndarray = field(default_factory=lambda: np.zeros(0))
    support_geoms: dict[int, str] = field(default_factory=dict)  # palm/forearm geom -> side
    body_geoms: set[int] = field(default_factory=set)
    balance_body: int = 0


class SceneIndex:
    """Names resolved to ids: robots, payload, static scene geoms."""

    def __init__(self, model: mujoco.MjModel) -> None:
        m = model
        self.robots: dict[str, RobotIndex] = {}
        for r in ROBOTS:
            p = PREFIX[r]
            ri = RobotIndex(r)
            for j in BASE_JOINTS:
                jid = m.joint(f"{p}{j}").id
                ri.qadr[j] = int(m.jnt_qposadr[jid])
                ri.dadr[j] = int(m.jnt_dofadr[jid])
                ri.act[j] = int(m.actuator(f"{p}{j}_servo").id)
            names = tuple(f"{p}{s}_{j}" for s in SIDES for j in ARM_JOINTS)
            ri.arm_joint_names = names
            ri.arm_qadr = np.array([m.jnt_qposadr[m.joint(n).id] for n in names])
            ri.arm_act = np.array([m.actuator(f"{n}_servo").id for n in names])
            ri.arm_lower = np.array([m.jnt_range[m.joint(n).id][0] for n in names])
            ri.arm_upper = np.array([m.jnt_range[m.joint(n).id][1] for n in names])
            for s in SIDES:
                for part in ("palm", "forearm"):
                    ri.support_geoms[m.geom(f"{p}{s}_{part}").id] = s
            ri.balance_body = m.body(f"{p}balance").id
            root = m.body(f"{p}base").id
            for g in range(m.ngeom):
                b = int(m.geom_bodyid[g])
                while b not in (0, root):
                    b = int(m.body_parentid[b])
                if b == root and g not in ri.support_geoms:
                    ri.body_geoms.add(g)
            self.robots[r] = ri
        self.payload_body = m.body("payload").id
        self.payload_geom = m.geom("payload_box").id
        self.payload_qadr = int(m.jnt_qposadr[m.joint("payload_free").id])
        self.payload_dadr = int(m.jnt_dofadr[m.joint("payload_free").id])
        self.floor = m.geom("floor").id
        self.static: dict[int, str] = {
            g: m.geom(g).name
            for g in range(m.ngeom)
            if m.geom(g).name.startswith(("wall_", "start_support", "target_support"))
        }
        self.geom_owner: dict[int, str] = {}
        for r, ri in self.robots.items():
            for g in ri.support_geoms:
                self.geom_owner[g] = f"{r}.{'palm' if 'palm' in m.geom(g).name else 'forearm'}"
            for g in ri.body_geoms:
                self.geom_owner[g] = f"{r}.body"
        self.geom_owner[self.payload_geom] = "payload"
        self.geom_owner[self.floor] = "floor"
        self.geom_owner.update(self.static)


def payload_pose(d: mujoco.MjData, idx: SceneIndex) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Payload centre [m], quaternion (w, x, y, z) and rotation matrix."""
    b = idx.payload_body
    return d.xpos[b].copy(), d.xquat[b].copy(), d.xmat[b].reshape(3, 3).copy()


def tilt_rad(rot: np.ndarray) -> float:
    """Angle between a body's z axis and world z [rad] (0 = level, upright)."""
    return float(math.acos(min(1.0, abs(float(rot[2, 2])))))


def lowest_z_m(pos: np.ndarray, rot: np.ndarray) -> float:
    """Lowest point of the payload box: ``z_o - sum_i |R_3i| h_i`` (the paper's clearance formula)."""
    return float(pos[2] - sum(abs(float(rot[2, i])) * PAYLOAD_HALF_M[i] for i in range(3)))


def robot_tilt_rad(d: mujoco.MjData, ri: RobotIndex) -> float:
    return tilt_rad(d.xmat[ri.balance_body].reshape(3, 3))


@dataclass(frozen=True)
class ContactSummary:
    """Contacts of one instant.

    Attributes:
        palm_force_n: ``robot -> (left, right)`` normal force of the payload on its palm+forearm [N].
        environment: Sorted ``"a|b"`` pairs touching the static scene or the floor (payload-floor,
            robot-wall, payload-wall, robot-pedestal, payload-pedestal).
        payload_touches: Owners of every geom touching the payload.
    """

    palm_force_n: dict[str, tuple[float, float]]
    environment: tuple[str, ...]
    payload_touches: tuple[str, ...]


def contacts(m: mujoco.MjModel, d: mujoco.MjData, idx: SceneIndex) -> ContactSummary:
    forces = {r: [0.0, 0.0] for r in idx.robots}
    env: set[str] = set()
    touches: set[str] = set()
    f6 = np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        g1, g2 = int(c.geom1), int(c.geom2)
        o1, o2 = idx.geom_owner.get(g1, "?"), idx.geom_owner.get(g2, "?")
        if idx.payload_geom in (g1, g2):
            other = g2 if g1 == idx.payload_geom else g1
            touches.add(idx.geom_owner.get(other, "?"))
            for r, ri in idx.robots.items():
                side = ri.support_geoms.get(other)
                if side is not None:
                    mujoco.mj_contactForce(m, d, i, f6)
                    forces[r][0 if side == "left" else 1] += abs(float(f6[0]))
        static = g1 in idx.static or g2 in idx.static or idx.floor in (g1, g2)
        if static:
            env.add("|".join(sorted((o1, o2))))
    return ContactSummary(
        {r: (v[0], v[1]) for r, v in forces.items()}, tuple(sorted(env)), tuple(sorted(touches))
    )
