"""The robosuite backend: robosuite's own tasks (scene, placement, randomisation, success check)
behind the one :class:`~captain_ros.backends.base.Backend` interface.

Physics is robosuite's MuJoCo model, stepped by this backend one 2 ms substep at a time. One
control tick (:meth:`RobosuiteBackend.servo`) sets the goal of robosuite's joint-position
controller (see :mod:`.env`), then for every substep runs that controller (torques on the Panda's
torque actuators), steps MuJoCo and reads the net external contact force on each arm; at the first
substep over the guard the arm holds where it is, exactly as on the MuJoCo backend. Our guarded
Cartesian motion (:mod:`captain_ros.motion`: IK per tick on :class:`.RobosuiteKinematics`) plans
the joint targets. Cameras are robosuite's (``head`` = ``agentview``, ``wrist`` =
``robot0_eye_in_hand``), rendered with metric depth by the MuJoCo backend's renderer.

World frame: robosuite's world lowered by its table height (0.8 m for Lift and Stack), so that
the table top is z = 0 as on every rig of this project (REP 103 axes unchanged; the Panda's base
then stands at (-0.56, 0, 0.112) m on its pedestal). Every position the backend reports (tool
poses, forward kinematics, camera poses, the spec, privileged state) is in this frame; robosuite's
own success check runs on its own state and does not see the shift.

Privileged state adds robosuite's own ``_check_success()`` as ``checks["robosuite_success"]``;
the robosuite tasks (:mod:`captain_ros.tasks.robosuite`) judge host success by it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence

import mujoco
import numpy as np

from captain_ros.backends.base import ArmTable, Backend
from captain_ros.backends.mujoco import privileged
from captain_ros.backends.mujoco import render as _render
from captain_ros.backends.mujoco.contacts import ContactReader
from captain_ros.backends.mujoco.snapshot import MujocoSnapshot, SimState
from captain_ros.backends.robosuite import env as rsenv
from captain_ros.backends.robosuite.config import IMAGE_SIZE_PX
from captain_ros.backends.robosuite.kinematics import RobosuiteKinematics, tool_pose
from captain_ros.backends.robosuite.scene import RobosuiteScene
from captain_ros.backends.robosuite.truth import in_table_frame
from captain_ros.core.errors import EStopError, InvalidArgumentError, UnknownNameError
from captain_ros.core.geometry import Pose, as_vector
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.core.types import (
    CameraFrame,
    ForceGuard,
    GripperState,
    JointState,
    RobotSpec,
    TickReport,
)

HOST_CHECK = "robosuite_success"


class RobosuiteBackend(ArmTable[RobosuiteKinematics], SimState, Backend):
    """A robosuite environment driven through the Backend interface.

    Args:
        scene: The task's :class:`RobosuiteScene` (environment, robots, objects, seed).
        image_size_px: Square camera resolution [px].
        render_segmentation: Fill :attr:`CameraFrame.segmentation` (object ids in scene order).
    """

    def __init__(
        self,
        scene: SceneSpec | None = None,
        *,
        image_size_px: int = IMAGE_SIZE_PX,
        render_segmentation: bool = False,
    ) -> None:
        scene = scene if scene is not None else RobosuiteScene(objects={"cube": "cube_main"})
        if not isinstance(scene, RobosuiteScene):
            raise InvalidArgumentError(
                "the robosuite backend runs robosuite tasks only "
                f"(got a {scene.rig!r} scene); see captain run --backend robosuite"
            )
        self.scene = scene
        self.env = rsenv.make_env(scene.env_name, scene.robots, scene.seed, dict(scene.env_kwargs))
        self.model: mujoco.MjModel = self.env.sim.model._model
        self.data: mujoco.MjData = self.env.sim.data._data
        m = self.model
        names = ["arm"] if len(scene.robots) == 1 else ["right", "left"][: len(scene.robots)]
        self._panda = {
            n: rsenv.index_robot(m, r, n, k)
            for k, (n, r) in enumerate(zip(names, self.env.robots, strict=True))
        }
        self._arms = {n: p.index for n, p in self._panda.items()}
        self._arm_list = list(self._arms.values())
        self._robot_bodies = frozenset().union(*(a.body_ids for a in self._arm_list))
        self._contacts = ContactReader(m, self._arm_list)
        self._kin = {
            n: RobosuiteKinematics(m, self.data, a, self._arms, self._robot_bodies)
            for n, a in self._arms.items()
        }
        bodies = {n: m.body(b).id for n, b in scene.objects.items()}
        raw = privileged.index_scene(
            m, self._arm_list, list(scene.objects.values()), self._robot_bodies
        )
        alias = {b: n for n, b in scene.objects.items()}
        self._index = dataclasses.replace(
            raw, objects=bodies, body_object={k: alias[v] for k, v in raw.body_object.items()}
        )
        labels = np.zeros(m.ngeom, dtype=np.int32)
        ids = {n: k + 1 for k, n in enumerate(scene.objects)}
        for g in range(m.ngeom):
            obj = self._index.body_object.get(int(m.geom_bodyid[g]))
            labels[g] = ids[obj] if obj else 0
        self._cams = {"head": "agentview"}
        for a in self._arm_list:
            self._cams[a.wrist_camera] = f"{a.prefix}eye_in_hand"
        m.vis.global_.offwidth = max(int(m.vis.global_.offwidth), image_size_px)
        m.vis.global_.offheight = max(int(m.vis.global_.offheight), image_size_px)
        m.vis.quality.offsamples = 0  # no MSAA; with shadows and reflections off: 4x faster
        off = {mujoco.mjtRndFlag.mjRND_SHADOW: 0, mujoco.mjtRndFlag.mjRND_REFLECTION: 0}
        self._renderer = _render.CameraRenderer(m, labels, image_size_px, scene_flags=off)
        self.render_segmentation = render_segmentation
        table_z = float(self.env.table_offset[2]) if hasattr(self.env, "table_offset") else 0.0
        self.origin_m = np.array([0.0, 0.0, table_z])
        """robosuite's world position of this backend's world origin (the table top's height)."""
        for k in self._kin.values():
            k.origin_m = self.origin_m
        self._spec = self._robot_spec()
        self.rng = np.random.default_rng(scene.seed)
        self._model_key = hashlib.sha1(f"{scene!r}".encode()).hexdigest()
        self._estop, self._estop_reason, self._ticks = False, "", 0
        self.reset()

    def _robot_spec(self) -> RobotSpec:
        return rsenv.robot_spec(
            f"robosuite_{self.scene.env_name}",
            self._panda,
            self.data,
            self.origin_m,
            tuple(self._cams),
            rsenv.table_box(self.env),
        )

    # --- setup ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """The state robosuite's reset left (its seeded placement), controller goals at rest."""
        d = self.data
        mujoco.mj_forward(self.model, d)
        self._targets = {n: d.qpos[a.qpos_adr].copy() for n, a in self._arms.items()}
        self._grip_cmd = {n: rsenv.PANDA_JAW_MAX_M for n in self._arms}
        for n in self._arms:
            self._apply_jaw(n)
        self._ever_held = dict.fromkeys(self.scene.objects, False)
        self._initial = {
            n: (d.xpos[b].copy(), d.xquat[b].copy()) for n, b in self._index.objects.items()
        }
        self._estop, self._ticks = False, 0

    # --- description (spec, kinematics: ArmTable) ----------------------------------------------
    @property
    def object_names(self) -> tuple[str, ...]:
        return tuple(self.scene.objects)

    # --- sensing (time_s: SimState) -----------------------------------------------------------
    def capture(self, cameras: Sequence[str] | None = None) -> dict[str, CameraFrame]:
        names = list(self._spec.cameras if cameras is None else cameras)
        for c in names:
            if c not in self._cams:
                raise UnknownNameError("camera", c, list(self._cams))
        mujoco.mj_forward(self.model, self.data)
        out = {}
        for c in names:
            f = self._renderer.render(
                self.data, self._cams[c], self.time_s(), self.render_segmentation
            )
            pose = f.world_from_camera.copy()
            pose[:3, 3] -= self.origin_m
            out[c] = dataclasses.replace(f, camera=c, world_from_camera=pose)
        return out

    def joint_state(self, arm: str) -> JointState:
        a = self._arm(arm)
        d = self.data
        return JointState(
            a.joint_names,
            d.qpos[a.qpos_adr].copy(),
            d.qvel[a.dof_adr].copy(),
            d.actuator_force[a.act_ids].copy(),
            self.time_s(),
        )

    def ee_pose(self, arm: str) -> Pose:
        a = self._arm(arm)
        mujoco.mj_kinematics(self.model, self.data)
        return tool_pose(
            self.data.site_xpos[a.tcp_site] - self.origin_m, self.data.site_xmat[a.tcp_site]
        )

    def jaw_opening_m(self, arm: str) -> float:
        p = self._panda[arm]
        return float(np.dot(p.gripper_act_sign, self.data.qpos[p.index.finger_qpos_adr]))

    def gripper(self, arm: str) -> GripperState:
        a = self._arm(arm)
        mujoco.mj_forward(self.model, self.data)
        pads = self._contacts.pads(self.data)[self._arm_list.index(a)]
        return GripperState(
            self.jaw_opening_m(arm),
            self._grip_cmd[arm],
            pads.normal_force_n,
            pads.held_body is not None,
            self.time_s(),
        )

    def contact_force_n(self, arm: str) -> float:
        a = self._arm(arm)
        mujoco.mj_forward(self.model, self.data)
        return float(self._contacts.arm_forces_n(self.data)[self._arm_list.index(a)])

    # --- commanding ----------------------------------------------------------------------------
    def _apply_jaw(self, arm: str) -> None:
        p = self._panda[arm]
        self.data.ctrl[p.index.finger_act_ids] = p.gripper_act_sign * (self._grip_cmd[arm] / 2)

    def servo(
        self, q_targets: Mapping[str, np.ndarray], duration_s: float, guard: ForceGuard
    ) -> TickReport:
        if self._estop:
            raise EStopError(f"e-stop latched ({self._estop_reason}); reset it before moving")
        if not (np.isfinite(duration_s) and duration_s > 0):
            raise InvalidArgumentError(f"duration_s must be positive, got {duration_s!r}")
        m, d = self.model, self.data
        cmd: dict[str, np.ndarray] = {}
        for name, q in q_targets.items():
            a = self._arm(name)
            q = np.clip(
                as_vector(q, len(a.joint_names), f"q_targets[{name}]"), a.lower_rad, a.upper_rad
            )
            step = rsenv.PANDA_MAX_VEL_RAD_S * duration_s
            cmd[name] = self._targets[name] + np.clip(q - self._targets[name], -step, step)
        self._targets.update(cmd)
        for name in self._panda:
            self._set_goal(name)
        watched = [self._arm_list.index(self._arms[n]) for n in (cmd or self._arms)]
        n_sub = max(1, int(round(duration_s / m.opt.timestep)))
        peak, stopped, emergency, k = 0.0, False, False, 0
        stop_at = guard.baseline_n + guard.stop_force_n
        for k in range(1, n_sub + 1):  # noqa: B007 - k is reported
            # as robosuite's env.step with lite_physics: step1, control, step2
            mujoco.mj_step1(m, d)
            for name, p in self._panda.items():
                lo, hi = m.actuator_ctrlrange[p.index.act_ids].T
                d.ctrl[p.index.act_ids] = np.clip(p.controller.run_controller(), lo, hi)
                self._apply_jaw(name)
            mujoco.mj_step2(m, d)
            forces = self._contacts.arm_forces_n(d)
            top = float(forces.max(initial=0.0))
            peak = max(peak, top)
            if top > guard.emergency_force_n:
                stopped = emergency = True
                self._hold(list(self._arms))
                break
            if max(float(forces[i]) for i in watched) > stop_at:
                stopped = True
                self._hold(list(cmd) or list(self._arms))
                break
        self._ticks += 1
        self._update_held()
        return TickReport(
            elapsed_s=k * m.opt.timestep,
            substeps=k,
            peak_force_n=peak,
            stopped=stopped,
            emergency=emergency,
            q_applied={n: self._targets[n].copy() for n in cmd},
        )

    def _set_goal(self, arm: str) -> None:
        c = self._panda[arm].controller
        c.set_goal(self._targets[arm].copy())
        c.new_update = True  # its next run reads that substep's mj_step1 state (exact replays)

    def _hold(self, arms: Sequence[str]) -> None:
        for name in arms:
            self._targets[name] = self.data.qpos[self._arms[name].qpos_adr].copy()
            self._set_goal(name)

    def command_gripper(self, arm: str, opening_m: float) -> float:
        self._arm(arm)
        if self._estop:
            raise EStopError(f"e-stop latched ({self._estop_reason}); reset it before moving")
        v = float(
            np.clip(float(as_vector(opening_m, 1, "opening_m")[0]), 0.0, rsenv.PANDA_JAW_MAX_M)
        )
        self._grip_cmd[arm] = v
        self._apply_jaw(arm)
        return v

    # --- safety --------------------------------------------------------------------------------
    def estop(self, reason: str = "") -> None:
        self._estop, self._estop_reason = True, reason or "operator"
        self._hold(list(self._arms))
        for name in self._arms:
            self._grip_cmd[name] = self.jaw_opening_m(name)
            self._apply_jaw(name)

    def reset_estop(self) -> None:
        self._estop, self._estop_reason = False, ""
        self._hold(list(self._arms))

    # --- simulation only (estopped and the snapshot's content: SimState) ----------------------
    def snapshot(self) -> MujocoSnapshot:
        return self._take_snapshot()

    def restore(self, snapshot: MujocoSnapshot) -> None:
        self._load_snapshot(snapshot)
        mujoco.mj_forward(self.model, self.data)
        for n in self._panda:
            self._set_goal(n)

    def _update_held(self) -> None:
        for pads in self._contacts.pads(self.data):
            obj = None if pads.held_body is None else self._index.body_object.get(pads.held_body)
            if obj is not None:
                self._ever_held[obj] = True

    def host_success(self) -> bool:
        """robosuite's own ``_check_success()`` on the current state."""
        mujoco.mj_forward(self.model, self.data)
        return bool(self.env._check_success())

    def privileged_state(self) -> PrivilegedState:
        """Simulator ground truth plus robosuite's success check. Never for policies."""
        d = self.data
        mujoco.mj_forward(self.model, d)
        state = privileged.privileged_state(
            self.model,
            d,
            self._index,
            self._arm_list,
            self._contacts.pads(d),
            self._contacts.arm_forces_n(d),
            self._grip_cmd,
            self._initial,
            self._ever_held,
            self._contacts.touching(d),
        )
        tools = {n: self.ee_pose(n) for n in self._arms}
        jaws = {n: self.jaw_opening_m(n) for n in self._arms}
        return in_table_frame(state, self.origin_m, tools, jaws, {HOST_CHECK: self.host_success()})

    def close(self) -> None:
        self._renderer.close()
        self.env.close()
