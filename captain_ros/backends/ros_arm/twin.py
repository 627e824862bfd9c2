"""The kinematic twin of a ROS arm: the user's URDF or MJCF in MuJoCo, posed at the measured joints.

MuJoCo compiles both formats (``MjSpec.from_file``). A tool point given as ``tcp_body`` +
``tcp_offset_m`` becomes a site of the compiled model. ``base_xyz_m``/``base_rpy_rad`` place the
model's world frame in the captain world frame; every pose and Jacobian the twin returns is in the
captain frame. The twin serves planning (:class:`TwinKinematics`: FK, Jacobian, collisions, so
``check_motion``/``preview_motion`` work as in simulation), the wrist cameras' poses and, from
:class:`~captain_ros.backends.twin.MujocoTwin`, the gravity torques that contact detection
subtracts from the measured efforts.

URDF notes: MuJoCo merges links attached by fixed joints into their parents (name the parent as
``tcp_body``), takes mesh file names without their ``package://`` folders (put the meshes beside
the URDF) and has joint velocity limits only through the URDF's ``<limit velocity>`` (read here).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from captain_ros.backends.mujoco.model import subtree_bodies
from captain_ros.backends.ros_arm.config import RosArmConfig
from captain_ros.backends.twin import MujocoTwin
from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.core.geometry import Pose, as_vector, matrix_to_quat
from captain_ros.core.types import ArmSpec, RobotSpec

PENETRATION_TOL_M = 1e-4


def rpy_matrix(rpy: tuple[float, float, float]) -> np.ndarray:
    """Rotation of roll-pitch-yaw [rad] (``R = Rz(y) Ry(p) Rx(r)``, as URDF)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def urdf_velocity_limits(path: Path) -> dict[str, float]:
    """``<limit velocity>`` of every joint of a URDF [rad/s or m/s]."""
    out: dict[str, float] = {}
    for j in ET.parse(path).getroot().iter("joint"):
        lim = j.find("limit")
        if lim is not None and lim.get("velocity") is not None:
            out[str(j.get("name"))] = float(lim.get("velocity", "0"))
    return out


@dataclass(frozen=True)
class ArmIndex:
    """Addresses of one arm in the compiled twin model."""

    name: str
    joint_names: tuple[str, ...]
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    body_ids: frozenset[int]
    base_body: int
    tcp_site: int
    flange_body: int
    grip_qpos_adr: np.ndarray
    lower_rad: np.ndarray
    upper_rad: np.ndarray


class ModelTwin(MujocoTwin):
    """Twin of the rig of ``config``; :meth:`update` poses one arm at its measured joints."""

    def __init__(self, config: RosArmConfig) -> None:
        self.config = config
        path = Path(config.model)
        try:
            spec = mujoco.MjSpec.from_file(str(path))
            for name, a in config.arms.items():
                if not a.tcp_site:
                    body = spec.body(a.tcp_body)
                    if body is None:
                        raise InvalidArgumentError(
                            f"arm {name}: tcp_body {a.tcp_body!r} is not a body of {path.name}"
                        )
                    body.add_site(name=f"captain_tcp_{name}", pos=list(a.tcp_offset_m))
            self.model = spec.compile()
        except (ValueError, mujoco.FatalError) as exc:  # parse/compile errors
            raise InvalidArgumentError(f"cannot load the arm model {path}: {exc}") from exc
        m = self.model
        self.data = mujoco.MjData(m)
        if m.nkey:
            self.data.qpos[:] = m.key_qpos[0]
        self.base = np.eye(4)
        self.base[:3, :3] = rpy_matrix(config.base_rpy_rad)
        self.base[:3, 3] = config.base_xyz_m
        self.arms: dict[str, ArmIndex] = {n: self._index(n) for n in config.arms}
        self.robot_bodies = frozenset().union(*(a.body_ids for a in self.arms.values()))
        self.spec = self._robot_spec(path)
        self.kin = {n: TwinKinematics(self, a) for n, a in self.arms.items()}
        self._ready()

    def _id(self, kind: mujoco.mjtObj, name: str, what: str, arm: str) -> int:
        i = mujoco.mj_name2id(self.model, kind, name)
        if i < 0:
            raise InvalidArgumentError(
                f"arm {arm}: {what} {name!r} is not in the model {Path(self.config.model).name}"
            )
        return int(i)

    def _index(self, name: str) -> ArmIndex:
        a, m = self.config.arms[name], self.model
        jids = [self._id(mujoco.mjtObj.mjOBJ_JOINT, j, "joint", name) for j in a.joints]
        for j, jid in zip(a.joints, jids, strict=True):
            if int(m.jnt_type[jid]) not in (
                int(mujoco.mjtJoint.mjJNT_HINGE),
                int(mujoco.mjtJoint.mjJNT_SLIDE),
            ):
                raise InvalidArgumentError(f"arm {name}: joint {j} is not a hinge or slide joint")
        first = int(m.jnt_bodyid[jids[0]])
        tcp = self._id(
            mujoco.mjtObj.mjOBJ_SITE, a.tcp_site or f"captain_tcp_{name}", "tcp site", name
        )
        flange = (
            self._id(mujoco.mjtObj.mjOBJ_BODY, a.flange_body, "flange body", name)
            if a.flange_body
            else int(m.site_bodyid[tcp])
        )
        grip = [
            self._id(mujoco.mjtObj.mjOBJ_JOINT, j, "gripper joint", name)
            for j in a.gripper.model_joints
        ]
        lo = np.array([m.jnt_range[j][0] if m.jnt_limited[j] else -np.pi for j in jids])
        hi = np.array([m.jnt_range[j][1] if m.jnt_limited[j] else np.pi for j in jids])
        if a.lower_rad:
            lo = np.maximum(lo, a.lower_rad)
        if a.upper_rad:
            hi = np.minimum(hi, a.upper_rad)
        return ArmIndex(
            name,
            a.joints,
            np.array([m.jnt_qposadr[j] for j in jids]),
            np.array([m.jnt_dofadr[j] for j in jids]),
            subtree_bodies(m, first),
            int(m.body_parentid[first]),
            tcp,
            flange,
            np.array([m.jnt_qposadr[j] for j in grip], dtype=int),
            lo,
            hi,
        )

    def _robot_spec(self, path: Path) -> RobotSpec:
        urdf_v = urdf_velocity_limits(path) if path.suffix.lower() == ".urdf" else {}
        arms = []
        for name, idx in self.arms.items():
            a = self.config.arms[name]
            if a.max_velocity_rad_s:
                vmax = np.asarray(a.max_velocity_rad_s)
            elif all(j in urdf_v and urdf_v[j] > 0 for j in a.joints):
                vmax = np.array([urdf_v[j] for j in a.joints])
            else:
                raise InvalidArgumentError(
                    f"arm {name}: no joint velocity limits; set "
                    "max_velocity_rad_s (an MJCF model has none)"
                )
            wrist = next((c for c, cam in self.config.cameras.items() if cam.mount == name), None)
            base = self.base @ self._body_matrix(idx.base_body)
            arms.append(
                ArmSpec(
                    name,
                    a.joints,
                    idx.lower_rad,
                    idx.upper_rad,
                    vmax,
                    Pose(base[:3, 3].copy(), matrix_to_quat(base[:3, :3])),
                    a.reach_m,
                    a.gripper.max_opening_m,
                    a.gripper.pad_size_m,
                    wrist,
                )
            )
        c = self.config
        return RobotSpec(
            c.name,
            tuple(arms),
            tuple(c.cameras),
            c.head_camera,
            np.asarray(c.workspace_min_m),
            np.asarray(c.workspace_max_m),
        )

    def _body_matrix(self, body: int) -> np.ndarray:
        mujoco.mj_kinematics(self.model, self.data)
        t = np.eye(4)
        t[:3, :3] = self.data.xmat[body].reshape(3, 3)
        t[:3, 3] = self.data.xpos[body]
        return t

    # --- posing and queries -------------------------------------------------------------------
    def update(self, arm: str, q: np.ndarray, jaw_m: float | None = None) -> None:
        """Pose ``arm`` at the measured joints (and jaw opening [m])."""
        a = self.arms[arm]
        g = self.config.arms[arm].gripper
        with self.lock:
            self.data.qpos[a.qpos_adr] = q
            if jaw_m is not None and a.grip_qpos_adr.size:
                self.data.qpos[a.grip_qpos_adr] = jaw_m / g.opening_scale / a.grip_qpos_adr.size
            mujoco.mj_kinematics(self.model, self.data)

    def flange_matrix(self, arm: str) -> np.ndarray:
        """Captain-world 4x4 pose of the flange body (a wrist camera's hand-eye reference)."""
        return self._captain(self.data.xmat, self.data.xpos, self.arms[arm].flange_body)


class TwinKinematics:
    """:class:`~captain_ros.backends.base.Kinematics` of one arm on the twin (private MjData)."""

    def __init__(self, twin: ModelTwin, arm: ArmIndex) -> None:
        m = twin.model
        self._twin, self._arm, self._m = twin, arm, m
        self._d = mujoco.MjData(m)
        self.joint_names: tuple[str, ...] = arm.joint_names
        self._n = len(arm.joint_names)
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))
        self._static = frozenset(b for b in range(m.nbody) if m.body_weldid[b] == 0)

    def _set(self, q_by_arm: Mapping[str, np.ndarray]) -> None:
        with self._twin.lock:
            self._d.qpos[:] = self._twin.data.qpos
        for name, q in q_by_arm.items():
            if name not in self._twin.arms:
                raise UnknownNameError("arm", name, list(self._twin.arms))
            a = self._twin.arms[name]
            qv = as_vector(q, len(a.joint_names), f"q[{name}]")
            if not np.all(np.isfinite(qv)):
                raise InvalidArgumentError(f"q[{name}] must be finite")
            self._d.qpos[a.qpos_adr] = qv
        mujoco.mj_kinematics(self._m, self._d)

    def fk_matrix(self, q: np.ndarray) -> np.ndarray:
        """4x4 tool pose in the captain world frame."""
        self._set({self._arm.name: q})
        s = self._arm.tcp_site
        t = np.eye(4)
        t[:3, :3] = self._d.site_xmat[s].reshape(3, 3)
        t[:3, 3] = self._d.site_xpos[s]
        return self._twin.base @ t

    def fk(self, q: np.ndarray) -> Pose:
        t = self.fk_matrix(q)
        return Pose(t[:3, 3].copy(), matrix_to_quat(t[:3, :3]))

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """(6, n) captain-world tool Jacobian, rows ``[linear; angular]``."""
        self._set({self._arm.name: q})
        mujoco.mj_comPos(self._m, self._d)
        mujoco.mj_jacSite(self._m, self._d, self._jacp, self._jacr, self._arm.tcp_site)
        r = self._twin.base[:3, :3]
        dof = self._arm.dof_adr
        return np.vstack([r @ self._jacp[:, dof], r @ self._jacr[:, dof]])

    def collisions(self, q_by_arm: Mapping[str, np.ndarray]) -> list[str]:
        """Robot-self, arm-arm and robot-static penetrations; ``[]`` when collision-free."""
        m, d = self._m, self._d
        self._set(q_by_arm)
        mujoco.mj_comPos(m, d)
        mujoco.mj_collision(m, d)
        robot = self._twin.robot_bodies
        out: list[str] = []
        for i in range(d.ncon):
            c = d.contact[i]
            if c.dist > -PENETRATION_TOL_M:
                continue
            b1, b2 = int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])
            r1, r2 = b1 in robot, b2 in robot
            if (r1 and r2) or (r1 and b2 in self._static) or (r2 and b1 in self._static):
                pair = f"{m.body(b1).name}<->{m.body(b2).name}"
                if pair not in out:
                    out.append(pair)
        return out


__all__ = ["ArmIndex", "ModelTwin", "TwinKinematics", "rpy_matrix", "urdf_velocity_limits"]
