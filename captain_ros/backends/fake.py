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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from captain_ros.backends import fake_render
from captain_ros.backends.base import Backend, Kinematics
from captain_ros.backends.fake_scene import FakeBox, boxes_from_scene, matrix_rpy, rpy_matrix
from captain_ros.core.errors import EStopError, InvalidArgumentError, UnknownNameError
from captain_ros.core.geometry import Pose, matrix_to_quat
from captain_ros.core.privileged import ArmTruth, ObjectTruth, PrivilegedState
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

__all__ = ["FakeBackend", "FakeBox", "FakeKinematics", "boxes_from_scene", "matrix_rpy", "rpy_matrix"]

JOINT_NAMES = ("x", "y", "z", "roll", "pitch", "yaw")
SUBSTEP_S = 0.002
JAW_SPEED_M_S = 0.1
JAW_MAX_M = 0.07
PAD_SIZE_M = (0.03, 0.02, 0.005)  # length (along approach), width, thickness [m]
HOME_Q = np.array([0.23, 0.0, 0.12, math.pi, 0.0, math.pi])
"""Tool down at (0.23, 0, 0.12) m from the base, quaternion (0, 0, 1, 0), like the MuJoCo rig."""


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
        self._head_pose = fake_render.look_at(np.array([0.05, 0.0, table_top_z_m + 0.55]),
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
            corners = hb.corners()
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

    def privileged_state(self) -> PrivilegedState:
        """Ground truth as the same typed state the MuJoCo backend returns (no articulations)."""
        st = self._state
        objects = {b.name: ObjectTruth(
            position_m=b.center_m, quat_wxyz=matrix_to_quat(b.rotation),
            initial_position_m=b.initial_center_m,
            initial_quat_wxyz=None if b.initial_rotation is None else matrix_to_quat(b.initial_rotation),
            held_by=b.held_by, ever_held=b.ever_held,
            pad_contacts={arm: 2 if b.held_by == arm else 0 for arm in st.q},
            touching=tuple(self._touching(b)), size_m=b.size_m) for b in st.boxes}
        arms = {}
        for arm in st.q:
            held = [b.name for b in st.boxes if b.held_by == arm]
            arms[arm] = ArmTruth(
                tcp_position_m=st.q[arm][:3], tcp_quat_wxyz=matrix_to_quat(rpy_matrix(*st.q[arm][3:6])),
                q_rad=st.q[arm], jaw_opening_m=st.jaw[arm], jaw_command_m=st.jaw_cmd[arm],
                held_object=held[0] if held else None, contact_force_n=st.force[arm])
        return PrivilegedState(time_s=st.t_s, objects=objects, arms=arms)

    # --- rendering -----------------------------------------------------------------------------
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

    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        names = list(self._spec.cameras) if cameras is None else list(cameras)
        for c in names:
            if c not in self._spec.cameras:
                raise UnknownNameError("camera", c, self._spec.cameras)
        return {c: fake_render.render(c, self.camera_pose(c), self.image_size, self._state.boxes,
                                      self.table_min_xy, self.table_max_xy, self.table_top_z_m, self._state.t_s)
                for c in names}
