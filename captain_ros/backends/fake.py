"""A kinematic fake rig (no physics) that behaves like a device.

Each arm's "joints" are the tool pose itself, ``q = [x, y, z, roll, pitch, yaw]`` (metres, radians;
``R = Rz(yaw) Ry(pitch) Rx(roll)``), so forward kinematics and the Jacobian are analytic. The tool
frame has its z axis along the approach direction and the jaw along its y axis; ``roll = pi, yaw = pi``
points the gripper down (quaternion (0, 0, 1, 0)). Rig geometry follows the MuJoCo PiPER rig (home
pose, 70 mm jaw, 3 cm pads, arm bases); the head camera sits lower than the MuJoCo one, at
(0.05, 0, 0.55) m looking at (0.42, 0, 0), so small boxes cover enough pixels at 192x256. Boxes rest on a table (top at ``table_top_z_m``), follow a closed gripper that
grasped them and drop onto their support when released. Contact force is a linear spring
(``stiffness_n_m``) on the penetration of the pads/palm (or of a held box) into the table or other
boxes, checked every 2 ms substep against the :class:`~captain_ros.core.types.ForceGuard`.
Cameras are rendered analytically (numpy ray casting of boxes and the table): RGB, metric z-depth
and a segmentation image. Snapshots restore the state exactly.
"""

from __future__ import annotations

import copy
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from captain_ros.backends.base import Backend, Kinematics
from captain_ros.core.errors import EStopError, InvalidArgumentError, UnknownNameError
from captain_ros.core.geometry import Pose, matrix_to_quat
from captain_ros.core.scene import SceneSpec
from captain_ros.core.types import (
    ArmSpec,
    CameraFrame,
    ForceGuard,
    GripperState,
    JointState,
    RobotSpec,
    TickReport,
)

JOINT_NAMES = ("x", "y", "z", "roll", "pitch", "yaw")
SUBSTEP_S = 0.002
JAW_SPEED_M_S = 0.1
JAW_MAX_M = 0.07
PAD_SIZE_M = (0.03, 0.02, 0.005)  # length (along approach), width, thickness [m]
HOME_Q = np.array([0.23, 0.0, 0.12, math.pi, 0.0, math.pi])
"""Tool down at (0.23, 0, 0.12) m from the base, quaternion (0, 0, 1, 0), like the MuJoCo rig."""


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Rotation ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch),
                              math.cos(yaw), math.sin(yaw))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def matrix_rpy(r: np.ndarray) -> np.ndarray:
    """Inverse of :func:`rpy_matrix` (pitch in [-pi/2, pi/2])."""
    pitch = math.asin(max(-1.0, min(1.0, -r[2, 0])))
    roll = math.atan2(r[2, 1], r[2, 2])
    yaw = math.atan2(r[1, 0], r[0, 0])
    return np.array([roll, pitch, yaw])


@dataclass
class FakeBox:
    """A box object. ``size_m`` are full extents [m]; ``rgb`` its colour (0-255)."""

    name: str
    center_m: np.ndarray
    size_m: np.ndarray
    yaw_rad: float = 0.0
    rgb: tuple[int, int, int] = (200, 40, 40)
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    held_by: str | None = None
    rel_tool: np.ndarray | None = None  # 4x4 box pose in the tool frame while held
    ever_held: bool = False
    initial_center_m: np.ndarray | None = None
    initial_rotation: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.center_m = np.asarray(self.center_m, dtype=float).copy()
        self.size_m = np.asarray(self.size_m, dtype=float).copy()
        if self.center_m.shape != (3,) or self.size_m.shape != (3,) or np.any(self.size_m <= 0):
            raise InvalidArgumentError(f"box {self.name}: center_m needs 3 numbers and size_m 3 positive ones")
        self.rotation = rpy_matrix(0.0, 0.0, self.yaw_rad)
        self.initial_center_m = self.center_m.copy()
        self.initial_rotation = self.rotation.copy()


class FakeKinematics:
    """Analytic kinematics of one Cartesian "arm" (q = tool pose)."""

    def __init__(self, backend: FakeBackend, arm: str) -> None:
        self._backend = backend
        self._arm = arm
        self.joint_names: tuple[str, ...] = JOINT_NAMES

    def fk(self, q: np.ndarray) -> Pose:
        q = np.asarray(q, dtype=float)
        return Pose(q[:3], matrix_to_quat(rpy_matrix(*q[3:6])))

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        roll, pitch, yaw = np.asarray(q, dtype=float)[3:6]
        jac = np.zeros((6, 6))
        jac[:3, :3] = np.eye(3)
        rz = rpy_matrix(0.0, 0.0, yaw)
        ry = rpy_matrix(0.0, pitch, 0.0)
        jac[3:, 3] = rz @ ry @ np.array([1.0, 0.0, 0.0])
        jac[3:, 4] = rz @ np.array([0.0, 1.0, 0.0])
        jac[3:, 5] = np.array([0.0, 0.0, 1.0])
        return jac

    def collisions(self, q_by_arm: Mapping[str, np.ndarray]) -> list[str]:
        return self._backend._collisions(dict(q_by_arm))


@dataclass
class _State:
    t_s: float
    q: dict[str, np.ndarray]
    q_target: dict[str, np.ndarray]
    jaw: dict[str, float]
    jaw_cmd: dict[str, float]
    force: dict[str, float]
    qd: dict[str, np.ndarray]
    boxes: list[FakeBox]
    estop: bool = False
    estop_reason: str = ""


def boxes_from_scene(scene: SceneSpec) -> list[FakeBox]:
    """Approximate the bodies of a SceneSpec's MJCF as boxes (cylinders/spheres by their bounding box).

    Colour comes from the geom's ``rgba`` or its ``material`` (in ``asset_xml``); yaw from the body's
    ``quat`` or ``euler``.
    """
    root = ET.fromstring(f"<worldbody>{scene.worldbody_xml}</worldbody>")
    materials: dict[str, str] = {}
    if scene.asset_xml.strip():
        for mat in ET.fromstring(f"<asset>{scene.asset_xml}</asset>").iter("material"):
            if mat.get("rgba"):
                materials[mat.get("name", "")] = mat.get("rgba", "")
    wanted = set(scene.object_bodies)
    boxes = []
    for body in root.iter("body"):
        name = body.get("name", "")
        if wanted and name not in wanted:
            continue
        geom = body.find("geom")
        if geom is None:
            continue
        pos = np.array([float(v) for v in body.get("pos", "0 0 0").split()])
        size = [float(v) for v in geom.get("size", "0.02 0.02 0.02").split()]
        gtype = geom.get("type", "sphere")
        if gtype == "box" and len(size) >= 3:
            full = 2 * np.array(size[:3])
        elif gtype in ("cylinder", "capsule") and len(size) >= 2:
            full = np.array([2 * size[0], 2 * size[0], 2 * size[1]])
        else:
            full = np.full(3, 2 * size[0])
        rgba_text = geom.get("rgba") or materials.get(geom.get("material", ""), "0.8 0.2 0.2 1")
        rgba = [float(v) for v in rgba_text.split()]
        if body.get("quat"):
            w, x, y, z = (float(v) for v in body.get("quat", "1 0 0 0").split())
            yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        else:
            euler = [float(v) for v in body.get("euler", "0 0 0").split()]
            yaw = euler[2] if len(euler) == 3 else 0.0
        boxes.append(FakeBox(name, pos, full, yaw, (int(255 * rgba[0]), int(255 * rgba[1]), int(255 * rgba[2]))))
    return boxes


class FakeBackend(Backend):
    """Kinematic fake rig.

    Args:
        boxes: Objects on the table (default: a red and a blue box).
        scene: A SceneSpec to take the rig and objects from (boxes approximated from its MJCF).
        rig: ``"piper"`` (arm ``"arm"``) or ``"piper_dual"`` (arms ``"left"``, ``"right"``).
        image_size: (height, width) of every camera [px].
        table_top_z_m: Height of the table surface [m].
        stiffness_n_m: Contact spring constant [N/m].
    """

    def __init__(self, boxes: Sequence[FakeBox] | None = None, *, scene: SceneSpec | None = None,
                 rig: str = "piper", image_size: tuple[int, int] = (192, 256),
                 table_top_z_m: float = 0.0, stiffness_n_m: float = 2000.0) -> None:
        if scene is not None:
            rig = scene.rig
            boxes = boxes_from_scene(scene) if boxes is None else boxes
        if rig not in ("piper", "piper_dual"):
            raise InvalidArgumentError(f"unknown rig {rig!r}; valid: piper, piper_dual")
        if boxes is None:
            boxes = [FakeBox("red_box", np.array([0.45, 0.05, table_top_z_m + 0.02]), np.full(3, 0.04), 0.0,
                             (200, 40, 40)),
                     FakeBox("blue_box", np.array([0.40, -0.15, table_top_z_m + 0.015]), np.array([0.06, 0.06, 0.03]),
                             0.0, (40, 60, 200))]
        self.table_top_z_m = float(table_top_z_m)
        self.table_min_xy = np.array([-0.1, -0.6])
        self.table_max_xy = np.array([0.9, 0.6])
        self.stiffness_n_m = float(stiffness_n_m)
        self.image_size = (int(image_size[0]), int(image_size[1]))
        lower = np.array([-0.3, -0.8, table_top_z_m - 0.1, -2 * math.pi, -math.pi / 2, -2 * math.pi])
        upper = np.array([1.0, 0.8, table_top_z_m + 0.9, 2 * math.pi, math.pi / 2, 2 * math.pi])
        vel = np.array([0.5, 0.5, 0.5, 3.0, 3.0, 3.0])
        bases = {"arm": (0.0, 0.0)} if rig == "piper" else {"left": (0.0, 0.25), "right": (0.0, -0.25)}
        arms = tuple(ArmSpec(name, JOINT_NAMES, lower, upper, vel, Pose(np.array([bx, by, table_top_z_m])), 0.626,
                             JAW_MAX_M, PAD_SIZE_M, "wrist" if rig == "piper" else f"{name}_wrist")
                     for name, (bx, by) in bases.items())
        cameras = ("head",) + tuple(a.wrist_camera for a in arms if a.wrist_camera)
        self._spec = RobotSpec(rig, arms, cameras, "head", np.array([-0.15, -0.65, table_top_z_m - 0.02]),
                               np.array([0.75, 0.65, table_top_z_m + 0.60]))
        home = {a.name: HOME_Q + np.array([0.0, bases[a.name][1], table_top_z_m, 0, 0, 0]) for a in arms}
        self._state = _State(0.0, {k: v.copy() for k, v in home.items()}, {k: v.copy() for k, v in home.items()},
                             {k: JAW_MAX_M for k in home}, {k: JAW_MAX_M for k in home}, {k: 0.0 for k in home},
                             {k: np.zeros(6) for k in home}, [copy.deepcopy(b) for b in boxes])
        self._kin = {a.name: FakeKinematics(self, a.name) for a in arms}
        self._rays: dict[tuple[int, int], np.ndarray] = {}
        self._head_pose = self._look_at(np.array([0.05, 0.0, table_top_z_m + 0.55]),
                                        np.array([0.42, 0.0, table_top_z_m]))
        self._update_held()
        self._update_forces()

    # --- description ---------------------------------------------------------------------------
    @property
    def spec(self) -> RobotSpec:
        return self._spec

    def _check_arm(self, arm: str) -> str:
        if arm not in self._state.q:
            raise UnknownNameError("arm", arm, self._spec.arm_names)
        return arm

    def kinematics(self, arm: str) -> Kinematics:
        return self._kin[self._check_arm(arm)]

    # --- geometry helpers ----------------------------------------------------------------------
    def _tool(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(q[:3], dtype=float), rpy_matrix(*q[3:6])

    def _pad_points(self, arm: str, q: np.ndarray, jaw: float) -> np.ndarray:
        p, r = self._tool(q)
        half_len = PAD_SIZE_M[0] / 2
        off = jaw / 2 + PAD_SIZE_M[2] / 2
        pts = [p + r @ np.array([0.0, s * off, a * half_len]) for s in (-1, 1) for a in (-1, 1)]
        pts.append(p + r @ np.array([0.0, 0.0, -(half_len + 0.01)]))  # palm
        return np.array(pts)

    @staticmethod
    def _depth_in_box(points: np.ndarray, box: FakeBox) -> float:
        local = (points - box.center_m) @ box.rotation
        inside = np.min(box.size_m / 2 - np.abs(local), axis=1)
        return float(max(0.0, inside.max()))

    def _table_depth(self, points: np.ndarray) -> float:
        on_table = np.all((points[:, :2] >= self.table_min_xy) & (points[:, :2] <= self.table_max_xy), axis=1)
        depth = np.where(on_table, self.table_top_z_m - points[:, 2], 0.0)
        return float(max(0.0, depth.max()))

    def _box_corners(self, box: FakeBox) -> np.ndarray:
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        return box.center_m + (signs * box.size_m / 2) @ box.rotation.T

    def _arm_force(self, arm: str) -> float:
        st = self._state
        pts = self._pad_points(arm, st.q[arm], st.jaw[arm])
        held = [b for b in st.boxes if b.held_by == arm]
        if not held:  # fast path: pads and palm above everything
            top = max([self.table_top_z_m] + [float(b.center_m[2] + np.abs(b.rotation[2]) @ b.size_m / 2)
                                              for b in st.boxes if b.held_by is None])
            if float(pts[:, 2].min()) > top:
                return 0.0
        depth = self._table_depth(pts)
        for b in st.boxes:
            if b.held_by is None:
                depth = max(depth, self._depth_in_box(pts, b))
        for hb in held:
            corners = self._box_corners(hb)
            depth = max(depth, self._table_depth(corners))
            for b in st.boxes:
                if b is not hb and b.held_by is None:
                    depth = max(depth, self._depth_in_box(corners, b))
        return self.stiffness_n_m * depth

    def _update_forces(self) -> None:
        for arm in self._state.q:
            self._state.force[arm] = self._arm_force(arm)

    def _update_held(self) -> None:
        for b in self._state.boxes:
            if b.held_by is not None and b.rel_tool is not None:
                p, r = self._tool(self._state.q[b.held_by])
                t = np.eye(4)
                t[:3, :3], t[:3, 3] = r, p
                tb = t @ b.rel_tool
                b.center_m, b.rotation = tb[:3, 3].copy(), tb[:3, :3].copy()

    def _support_z(self, box: FakeBox) -> float:
        z = self.table_top_z_m
        for other in self._state.boxes:
            if other is box or other.held_by is not None:
                continue
            local = (box.center_m - other.center_m) @ other.rotation
            if np.all(np.abs(local[:2]) <= other.size_m[:2] / 2) and other.center_m[2] < box.center_m[2]:
                z = max(z, other.center_m[2] + other.size_m[2] / 2)
        return z

    def _width_along(self, box: FakeBox, axis: np.ndarray) -> float:
        return float(np.sum(np.abs(box.rotation.T @ axis) * box.size_m))

    def _jaw_step(self, arm: str, dt: float) -> None:
        st = self._state
        cmd, jaw = st.jaw_cmd[arm], st.jaw[arm]
        if abs(cmd - jaw) < 1e-9:
            return
        new = jaw + float(np.clip(cmd - jaw, -JAW_SPEED_M_S * dt, JAW_SPEED_M_S * dt))
        p, r = self._tool(st.q[arm])
        held = [b for b in st.boxes if b.held_by == arm]
        if new < jaw and not held:  # closing: does a box sit between the pads?
            for b in st.boxes:
                if b.held_by is not None:
                    continue
                local = r.T @ (b.center_m - p)
                w = self._width_along(b, r[:, 1])
                half_x = self._width_along(b, r[:, 0]) / 2
                half_z = self._width_along(b, r[:, 2]) / 2
                if (abs(local[0]) < half_x + PAD_SIZE_M[1] / 2 and abs(local[2]) < half_z + PAD_SIZE_M[0] / 2
                        and abs(local[1]) < jaw / 2 and w <= jaw + 1e-9 and new <= w):
                    b.center_m = p + r @ np.array([local[0], 0.0, local[2]])  # pads centre the box
                    t_tool = np.eye(4)
                    t_tool[:3, :3], t_tool[:3, 3] = r, p
                    t_box = np.eye(4)
                    t_box[:3, :3], t_box[:3, 3] = b.rotation, b.center_m
                    b.held_by, b.rel_tool = arm, np.linalg.inv(t_tool) @ t_box
                    b.ever_held = True
                    new = w
                    st.jaw_cmd[arm] = max(cmd, 0.0)
                    break
        elif held and new > jaw:
            for b in held:
                if new > self._width_along(b, r[:, 1]) + 0.002:
                    self._drop(b)
        if held and new < jaw:
            new = max(new, max(self._width_along(b, r[:, 1]) for b in held))
        st.jaw[arm] = new

    def _drop(self, box: FakeBox) -> None:
        box.held_by, box.rel_tool = None, None
        yaw = float(matrix_rpy(box.rotation)[2])
        box.rotation = rpy_matrix(0.0, 0.0, yaw)
        box.yaw_rad = yaw
        box.center_m[2] = self._support_z(box) + box.size_m[2] / 2

    def _collisions(self, q_by_arm: dict[str, np.ndarray]) -> list[str]:
        qs = {arm: np.asarray(q_by_arm.get(arm, self._state.q[arm]), dtype=float) for arm in self._state.q}
        out = []
        for arm, q in qs.items():
            p, r = self._tool(q)
            wrist = p - r[:, 2] * 0.12
            if wrist[2] < self.table_top_z_m or p[2] < self.table_top_z_m - 0.03:
                out.append(f"{arm}/table")
        names = sorted(qs)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if np.linalg.norm(qs[a][:3] - qs[b][:3]) < 0.08:
                    out.append(f"{a}/{b}")
        return out

    # --- sensing -------------------------------------------------------------------------------
    def time_s(self) -> float:
        return self._state.t_s

    def joint_state(self, arm: str) -> JointState:
        self._check_arm(arm)
        st = self._state
        return JointState(JOINT_NAMES, st.q[arm].copy(), st.qd[arm].copy(), np.zeros(6), st.t_s)

    def ee_pose(self, arm: str) -> Pose:
        return self._kin[self._check_arm(arm)].fk(self._state.q[arm])

    def gripper(self, arm: str) -> GripperState:
        self._check_arm(arm)
        st = self._state
        holding = any(b.held_by == arm for b in st.boxes)
        return GripperState(st.jaw[arm], st.jaw_cmd[arm], 10.0 if holding else 0.0, holding, st.t_s)

    def contact_force_n(self, arm: str) -> float:
        return self._state.force[self._check_arm(arm)]

    # --- commanding ----------------------------------------------------------------------------
    def servo(self, q_targets: Mapping[str, np.ndarray], duration_s: float, guard: ForceGuard) -> TickReport:
        st = self._state
        if st.estop:
            raise EStopError(st.estop_reason or "e-stop latched")
        if not (math.isfinite(duration_s) and duration_s > 0):
            raise InvalidArgumentError(f"duration_s must be positive and finite, got {duration_s}")
        for arm, q in q_targets.items():
            self._check_arm(arm)
            a = self._spec.arm(arm)
            q = np.asarray(q, dtype=float).reshape(-1)
            if q.shape != (6,) or not np.all(np.isfinite(q)):
                raise InvalidArgumentError(f"q target for {arm} must be 6 finite numbers")
            st.q_target[arm] = np.clip(q, a.lower_rad, a.upper_rad)
        n = max(1, int(round(duration_s / SUBSTEP_S)))
        peak, stopped, emergency, done = 0.0, False, False, 0
        for _ in range(n):
            done += 1
            for arm in st.q:
                a = self._spec.arm(arm)
                step = np.clip(st.q_target[arm] - st.q[arm], -a.max_velocity_rad_s * SUBSTEP_S,
                               a.max_velocity_rad_s * SUBSTEP_S)
                st.q[arm] = st.q[arm] + step
                st.qd[arm] = step / SUBSTEP_S
                self._jaw_step(arm, SUBSTEP_S)
            self._update_held()
            self._update_forces()
            st.t_s += SUBSTEP_S
            worst = max(st.force.values())
            peak = max(peak, worst)
            if worst > guard.emergency_force_n:
                stopped = emergency = True
            elif worst > guard.baseline_n + guard.stop_force_n:
                stopped = True
            if stopped:
                for arm in st.q:
                    st.q_target[arm] = st.q[arm].copy()
                    st.qd[arm] = np.zeros(6)
                break
        return TickReport(done * SUBSTEP_S, done, peak, stopped, emergency,
                          {arm: st.q_target[arm].copy() for arm in q_targets})

    def command_gripper(self, arm: str, opening_m: float) -> float:
        self._check_arm(arm)
        if self._state.estop:
            raise EStopError(self._state.estop_reason or "e-stop latched")
        if not math.isfinite(opening_m):
            raise InvalidArgumentError(f"opening_m must be finite, got {opening_m}")
        applied = float(np.clip(opening_m, 0.0, JAW_MAX_M))
        self._state.jaw_cmd[arm] = applied
        return applied

    # --- safety --------------------------------------------------------------------------------
    def estop(self, reason: str = "") -> None:
        st = self._state
        st.estop, st.estop_reason = True, reason
        for arm in st.q:
            st.q_target[arm] = st.q[arm].copy()
            st.qd[arm] = np.zeros(6)
            st.jaw_cmd[arm] = st.jaw[arm]

    def reset_estop(self) -> None:
        self._state.estop, self._state.estop_reason = False, ""
        for arm in self._state.q:
            self._state.q_target[arm] = self._state.q[arm].copy()

    @property
    def estopped(self) -> bool:
        return self._state.estop

    # --- simulation only -----------------------------------------------------------------------
    def snapshot(self) -> Any:
        return copy.deepcopy(self._state)

    def restore(self, snapshot: Any) -> None:
        if not isinstance(snapshot, _State):
            raise InvalidArgumentError("not a FakeBackend snapshot")
        self._state = copy.deepcopy(snapshot)

    def _touching(self, box: FakeBox) -> list[str]:
        out = []
        bottom = box.center_m[2] - box.size_m[2] / 2
        if box.held_by is None and abs(bottom - self.table_top_z_m) < 1e-6:
            out.append("table")
        for other in self._state.boxes:
            if other is box:
                continue
            top = other.center_m[2] + other.size_m[2] / 2
            other_bottom = other.center_m[2] - other.size_m[2] / 2
            over = np.all(np.abs((box.center_m - other.center_m)[:2]) <= (box.size_m[:2] + other.size_m[:2]) / 2)
            if over and (abs(bottom - top) < 1e-6 or abs(box.center_m[2] + box.size_m[2] / 2 - other_bottom) < 1e-6):
                out.append(other.name)
        return sorted(out)

    def privileged_state(self) -> dict[str, Any]:
        """Ground truth in the MuJoCo backend's schema (objects, arms, joints, bodies)."""
        st = self._state
        objects = {}
        for b in st.boxes:
            objects[b.name] = {
                "position_m": b.center_m.tolist(), "quat_wxyz": matrix_to_quat(b.rotation).tolist(),
                "initial_position_m": b.initial_center_m.tolist(),  # type: ignore[union-attr]
                "initial_quat_wxyz": matrix_to_quat(b.initial_rotation).tolist(),  # type: ignore[arg-type]
                "yaw_rad": float(matrix_rpy(b.rotation)[2]), "size_m": b.size_m.tolist(),
                "held_by": b.held_by, "held": b.held_by is not None, "ever_held": b.ever_held,
                "pad_contacts": {arm: 2 if b.held_by == arm else 0 for arm in st.q},
                "touching": self._touching(b)}
        arms = {}
        for arm in st.q:
            held = [b.name for b in st.boxes if b.held_by == arm]
            arms[arm] = {"tcp_position_m": st.q[arm][:3].tolist(),
                         "tcp_quat_wxyz": matrix_to_quat(rpy_matrix(*st.q[arm][3:6])).tolist(),
                         "q_rad": st.q[arm].tolist(), "jaw_opening_m": st.jaw[arm], "jaw_command_m": st.jaw_cmd[arm],
                         "holding": bool(held), "held_object": held[0] if held else None,
                         "contact_force_n": st.force[arm]}
        return {"time_s": st.t_s, "table_top_z_m": self.table_top_z_m, "objects": objects, "arms": arms,
                "joints": {}, "bodies": {}}

    # --- rendering -----------------------------------------------------------------------------
    def _intrinsics(self) -> np.ndarray:
        h, w = self.image_size
        f = (h / 2) / math.tan(math.radians(30.0))
        return np.array([[f, 0.0, (w - 1) / 2], [0.0, f, (h - 1) / 2], [0.0, 0.0, 1.0]])

    @staticmethod
    def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
        fwd = (target - eye) / np.linalg.norm(target - eye)
        right = np.cross(fwd, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        down = np.cross(fwd, right)
        t = np.eye(4)
        t[:3, 0], t[:3, 1], t[:3, 2], t[:3, 3] = right, down, fwd, eye
        return t

    def camera_pose(self, camera: str) -> np.ndarray:
        """World pose (4x4) of a camera's optical frame."""
        if camera == "head":
            return self._head_pose.copy()
        for a in self._spec.arms:
            if a.wrist_camera == camera:
                p, r = self._tool(self._state.q[a.name])
                t = np.eye(4)
                t[:3, :3], t[:3, 3] = r, p - r[:, 2] * 0.10
                return t
        raise UnknownNameError("camera", camera, self._spec.cameras)

    def _camera_rays(self) -> np.ndarray:
        key = self.image_size
        if key not in self._rays:
            h, w = key
            k = self._intrinsics()
            v, u = np.mgrid[0:h, 0:w].astype(float)
            self._rays[key] = np.stack([(u - k[0, 2]) / k[0, 0], (v - k[1, 2]) / k[1, 1], np.ones_like(u)], -1).reshape(-1, 3)
        return self._rays[key]

    def _render(self, camera: str) -> CameraFrame:
        h, w = self.image_size
        pose = self.camera_pose(camera)
        k = self._intrinsics()
        dirs = self._camera_rays() @ pose[:3, :3].T
        origin = pose[:3, 3]
        light = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
        rgb = np.tile(np.array([70.0, 70.0, 78.0]), (h * w, 1))
        seg = np.zeros(h * w, dtype=np.int32)
        # the table top: a bounded horizontal plane
        with np.errstate(divide="ignore", invalid="ignore"):
            t_tab = (self.table_top_z_m - origin[2]) / dirs[:, 2]
        xy = origin[:2] + t_tab[:, None] * dirs[:, :2]
        on = (t_tab > 1e-6) & np.all((xy >= self.table_min_xy) & (xy <= self.table_max_xy), axis=1)
        depth = np.where(on, t_tab, np.inf)
        rgb[on] = np.array([150.0, 120.0, 90.0]) * (0.45 + 0.55 * light[2])
        for idx, box in enumerate(self._state.boxes, start=1):
            sel = self._pixels_of(box, pose, k, h, w)
            if sel is None:
                sel = np.arange(h * w)
            if sel.size == 0:
                continue
            o = (origin - box.center_m) @ box.rotation
            d = dirs[sel] @ box.rotation
            half = box.size_m / 2
            with np.errstate(divide="ignore", invalid="ignore"):
                t1 = (-half - o) / d
                t2 = (half - o) / d
            tnear = np.nan_to_num(np.minimum(t1, t2), nan=-np.inf)
            tfar = np.nan_to_num(np.maximum(t1, t2), nan=np.inf)
            t_in, t_out = tnear.max(axis=1), tfar.min(axis=1)
            hit = (t_out >= t_in) & (t_in > 1e-6) & (t_in < depth[sel])
            if not np.any(hit):
                continue
            pix = sel[hit]
            axis = np.argmax(tnear[hit], axis=1)
            rows = np.arange(axis.size)
            normal_local = np.zeros((axis.size, 3))
            normal_local[rows, axis] = -np.sign(d[hit][rows, axis])
            shade = 0.45 + 0.55 * np.clip((normal_local @ box.rotation.T) @ light, 0.0, 1.0)
            depth[pix] = t_in[hit]
            rgb[pix] = np.asarray(box.rgb, dtype=float) * shade[:, None]
            seg[pix] = idx
        depth_img = np.where(np.isfinite(depth), depth, 0.0).astype(np.float32).reshape(h, w)
        return CameraFrame(camera, np.clip(rgb, 0, 255).astype(np.uint8).reshape(h, w, 3), depth_img,
                           k, pose, self._state.t_s, seg.reshape(h, w))

    def _pixels_of(self, box: FakeBox, pose: np.ndarray, k: np.ndarray, h: int, w: int) -> np.ndarray | None:
        """Flat pixel indices inside the box's projected bounding rectangle (None = all pixels)."""
        corners = self._box_corners(box)
        cam = (corners - pose[:3, 3]) @ pose[:3, :3]
        if np.any(cam[:, 2] < 0.01):
            return None
        u = k[0, 0] * cam[:, 0] / cam[:, 2] + k[0, 2]
        v = k[1, 1] * cam[:, 1] / cam[:, 2] + k[1, 2]
        u0, u1 = max(0, int(np.floor(u.min())) - 1), min(w - 1, int(np.ceil(u.max())) + 1)
        v0, v1 = max(0, int(np.floor(v.min())) - 1), min(h - 1, int(np.ceil(v.max())) + 1)
        if u0 > u1 or v0 > v1:
            return np.zeros(0, dtype=np.int64)
        vv, uu = np.mgrid[v0:v1 + 1, u0:u1 + 1]
        return (vv * w + uu).reshape(-1)

    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        names = list(self._spec.cameras) if cameras is None else list(cameras)
        for c in names:
            if c not in self._spec.cameras:
                raise UnknownNameError("camera", c, self._spec.cameras)
        return {c: self._render(c) for c in names}
