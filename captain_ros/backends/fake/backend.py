"""A kinematic fake rig (no physics) that behaves like a device.

Each arm's "joints" are the tool pose itself (:mod:`.kinematics`), so forward kinematics and the
Jacobian are analytic; ``roll = pi, yaw = pi`` points the gripper down (quaternion (0, 0, 1, 0)).
Rig geometry follows the MuJoCo PiPER rig (home pose, 70 mm jaw, 3 cm pads, arm bases); the head
camera sits lower than the MuJoCo one, at (0.05, 0, 0.55) m looking at (0.42, 0, 0), so small
boxes cover enough pixels at 192x256. Boxes rest on a table, follow a closed gripper that grasped
them and drop onto their support when released; contact force is a spring on penetration checked
every 2 ms substep against the :class:`~captain_ros.core.types.ForceGuard` (:mod:`.contacts`).
Cameras are rendered analytically (:mod:`.render`): RGB, metric z-depth and a segmentation
image. Snapshots restore the state exactly.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.backends.base import Backend, Kinematics
from captain_ros.backends.fake import contacts
from captain_ros.backends.fake.contacts import FakeState, Table
from captain_ros.backends.fake.kinematics import (
    HOME_Q,
    JAW_MAX_M,
    JOINT_NAMES,
    PAD_SIZE_M,
    FakeKinematics,
    tool,
)
from captain_ros.backends.fake.raycast import look_at
from captain_ros.backends.fake.render import render
from captain_ros.backends.fake.scene import FakeBox, boxes_from_scene, rpy_matrix
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

SUBSTEP_S = 0.002


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

    def __init__(
        self,
        boxes: Sequence[FakeBox] | None = None,
        *,
        scene: SceneSpec | None = None,
        rig: str = "piper",
        image_size: tuple[int, int] = (192, 256),
        table_top_z_m: float = 0.0,
        stiffness_n_m: float = 2000.0,
    ) -> None:
        if scene is not None:
            rig = scene.rig
            boxes = boxes_from_scene(scene) if boxes is None else boxes
        if rig not in ("piper", "piper_dual"):
            raise InvalidArgumentError(f"unknown rig {rig!r}; valid: piper, piper_dual")
        if boxes is None:
            boxes = [
                FakeBox(
                    "red_box",
                    np.array([0.45, 0.05, table_top_z_m + 0.02]),
                    np.full(3, 0.04),
                    0.0,
                    (200, 40, 40),
                ),
                FakeBox(
                    "blue_box",
                    np.array([0.40, -0.15, table_top_z_m + 0.015]),
                    np.array([0.06, 0.06, 0.03]),
                    0.0,
                    (40, 60, 200),
                ),
            ]
        self.table = Table(
            float(table_top_z_m), np.array([-0.1, -0.6]), np.array([0.9, 0.6]), float(stiffness_n_m)
        )
        self.table_top_z_m = self.table.top_z_m
        self.image_size = (int(image_size[0]), int(image_size[1]))
        lower = np.array(
            [-0.3, -0.8, table_top_z_m - 0.1, -2 * math.pi, -math.pi / 2, -2 * math.pi]
        )
        upper = np.array([1.0, 0.8, table_top_z_m + 0.9, 2 * math.pi, math.pi / 2, 2 * math.pi])
        vel = np.array([0.5, 0.5, 0.5, 3.0, 3.0, 3.0])
        bases = (
            {"arm": (0.0, 0.0)} if rig == "piper" else {"left": (0.0, 0.25), "right": (0.0, -0.25)}
        )
        arms = tuple(
            ArmSpec(
                name,
                JOINT_NAMES,
                lower,
                upper,
                vel,
                Pose(np.array([bx, by, table_top_z_m])),
                0.626,
                JAW_MAX_M,
                PAD_SIZE_M,
                "wrist" if rig == "piper" else f"{name}_wrist",
            )
            for name, (bx, by) in bases.items()
        )
        cameras = ("head",) + tuple(a.wrist_camera for a in arms if a.wrist_camera)
        self._spec = RobotSpec(
            rig,
            arms,
            cameras,
            "head",
            np.array([-0.15, -0.65, table_top_z_m - 0.02]),
            np.array([0.75, 0.65, table_top_z_m + 0.60]),
        )
        home = {
            a.name: HOME_Q + np.array([0.0, bases[a.name][1], table_top_z_m, 0, 0, 0]) for a in arms
        }
        self._state = FakeState(
            0.0,
            {k: v.copy() for k, v in home.items()},
            {k: v.copy() for k, v in home.items()},
            {k: JAW_MAX_M for k in home},
            {k: JAW_MAX_M for k in home},
            {k: 0.0 for k in home},
            {k: np.zeros(6) for k in home},
            [copy.deepcopy(b) for b in boxes],
        )
        kin = FakeKinematics(lambda q: contacts.collisions(self._state, self.table, q))
        self._kin = {a.name: kin for a in arms}
        self._head_pose = look_at(
            np.array([0.05, 0.0, table_top_z_m + 0.55]), np.array([0.42, 0.0, table_top_z_m])
        )
        contacts.carry_held(self._state)
        contacts.update_forces(self._state, self.table)

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
    def servo(
        self, q_targets: Mapping[str, np.ndarray], duration_s: float, guard: ForceGuard
    ) -> TickReport:
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
                step = np.clip(
                    st.q_target[arm] - st.q[arm],
                    -a.max_velocity_rad_s * SUBSTEP_S,
                    a.max_velocity_rad_s * SUBSTEP_S,
                )
                st.q[arm] = st.q[arm] + step
                st.qd[arm] = step / SUBSTEP_S
                contacts.jaw_step(st, self.table, arm, SUBSTEP_S)
            contacts.carry_held(st)
            contacts.update_forces(st, self.table)
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
        return TickReport(
            done * SUBSTEP_S,
            done,
            peak,
            stopped,
            emergency,
            {arm: st.q_target[arm].copy() for arm in q_targets},
        )

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
        if not isinstance(snapshot, FakeState):
            raise InvalidArgumentError("not a FakeBackend snapshot")
        self._state = copy.deepcopy(snapshot)

    def privileged_state(self) -> PrivilegedState:
        """Ground truth as the same typed state the MuJoCo backend returns (no articulations)."""
        st = self._state
        objects = {
            b.name: ObjectTruth(
                position_m=b.center_m,
                quat_wxyz=matrix_to_quat(b.rotation),
                initial_position_m=b.initial_center_m,
                initial_quat_wxyz=None
                if b.initial_rotation is None
                else matrix_to_quat(b.initial_rotation),
                held_by=b.held_by,
                ever_held=b.ever_held,
                pad_contacts={arm: 2 if b.held_by == arm else 0 for arm in st.q},
                touching=tuple(contacts.touching(st, self.table, b)),
                size_m=b.size_m,
            )
            for b in st.boxes
        }
        arms = {}
        for arm in st.q:
            held = [b.name for b in st.boxes if b.held_by == arm]
            arms[arm] = ArmTruth(
                tcp_position_m=st.q[arm][:3],
                tcp_quat_wxyz=matrix_to_quat(rpy_matrix(*st.q[arm][3:6])),
                q_rad=st.q[arm],
                jaw_opening_m=st.jaw[arm],
                jaw_command_m=st.jaw_cmd[arm],
                held_object=held[0] if held else None,
                contact_force_n=st.force[arm],
            )
        return PrivilegedState(time_s=st.t_s, objects=objects, arms=arms)

    # --- rendering -----------------------------------------------------------------------------
    def camera_pose(self, camera: str) -> np.ndarray:
        """World pose (4x4) of a camera's optical frame."""
        if camera == "head":
            return self._head_pose.copy()
        for a in self._spec.arms:
            if a.wrist_camera == camera:
                p, r = tool(self._state.q[a.name])
                t = np.eye(4)
                t[:3, :3], t[:3, 3] = r, p - r[:, 2] * 0.10
                return t
        raise UnknownNameError("camera", camera, self._spec.cameras)

    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        names = list(self._spec.cameras) if cameras is None else list(cameras)
        for c in names:
            if c not in self._spec.cameras:
                raise UnknownNameError("camera", c, self._spec.cameras)
        return {
            c: render(
                c,
                self.camera_pose(c),
                self.image_size,
                self._state.boxes,
                self.table.min_xy,
                self.table.max_xy,
                self.table.top_z_m,
                self._state.t_s,
            )
            for c in names
        }
