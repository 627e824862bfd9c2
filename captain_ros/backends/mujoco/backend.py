"""The MuJoCo simulation backend: PiPER single-arm (``piper``) or dual-arm (``piper_dual``) rig.

Control: position actuators (PD, gravity-compensated links) track joint targets. One control tick
(:meth:`MujocoBackend.servo`, e.g. 20 ms) runs ``duration_s / 2 ms`` physics substeps and reads the
contact force of every arm after *each* substep (:mod:`.control`); at the first substep over the
guard the commanded arms hold their current position. The jaw moves while the backend is stepped.

Rig geometry (see ``scripts/generate_urdf.py``): table top at z = 0; arm base(s) on the table's rear edge
(single arm at the origin, dual rig at y = +-0.25 m), facing +x. Head camera: single rig on a
stand at the far end of the table, (0.8, 0, 0.9) m looking back at (0.3, 0, 0), so the ready arm
never hides the objects; dual rig high behind the arms, (0, 0, 1.0) m looking at (0.42, 0, 0). Tool frame ``tcp`` (between the pad centres, 13 cm beyond the flange):
z = approach, y = jaw closing axis. Tool pointing straight down = quaternion (0, 0, 1, 0)
(:data:`~captain_ros.backends.mujoco.model.TOOL_DOWN_QUAT_WXYZ`); with the tool vertical the
PiPER's J5 limit (+-75 deg) caps the tool height at ~0.14 m at 0.2-0.3 m from the base, ~0.10 m at
0.4 m and ~0.06 m at 0.45 m; tilt the tool to go higher. The home pose is tool-down at
(0.23, 0, 0.12) m relative to each base, jaws open (70 mm).

Privileged state (:meth:`MujocoBackend.privileged_state`, simulation ground truth for tasks and the
critic; never for policies) is the typed :class:`~captain_ros.core.privileged.PrivilegedState`
(objects, arms, articulated joints, fixture bodies), built by :mod:`.privileged`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import mujoco
import numpy as np

from captain_ros.backends.base import ArmTable, Backend
from captain_ros.backends.mujoco import model as rigmodel
from captain_ros.backends.mujoco import privileged
from captain_ros.backends.mujoco import render as _render
from captain_ros.backends.mujoco.contacts import ContactReader
from captain_ros.backends.mujoco.control import guarded_substeps
from captain_ros.backends.mujoco.kinematics import MujocoKinematics
from captain_ros.backends.mujoco.model import site_pose
from captain_ros.backends.mujoco.noise import BaseParams, NoiseDraw, NoiseState, switch_noise
from captain_ros.backends.mujoco.snapshot import MujocoSnapshot, SimState
from captain_ros.core.errors import EStopError, InvalidArgumentError, UnknownNameError
from captain_ros.core.geometry import Pose, as_vector
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.core.types import (
    CameraFrame,
    ForceGuard,
    GripperState,
    JointState,
    TickReport,
)


class MujocoBackend(ArmTable[MujocoKinematics], SimState, Backend):
    """MuJoCo PiPER rig composed with a task scene.

    Args:
        scene: The task's scene (``None``: the empty table of ``rig``). ``scene.rig`` wins over ``rig``.
        rig: ``"piper"`` or ``"piper_dual"`` when no scene is given.
        image_size_px: Square camera resolution [px] (512 as in the paper).
        render_segmentation: Fill :attr:`CameraFrame.segmentation` (object ids following
            ``scene.object_bodies``, 1-based; 0 = background/robot/table). Costs ~25 ms per camera.
        noise: A :class:`~captain_ros.backends.mujoco.noise.NoiseDraw` (or its dict) for the
            stochastic mode; ``None`` (default): deterministic.
    """

    def __init__(
        self,
        scene: SceneSpec | None = None,
        rig: str = "piper",
        *,
        image_size_px: int = _render.IMAGE_SIZE_PX,
        render_segmentation: bool = False,
        noise: NoiseDraw | Mapping[str, Any] | None = None,
    ) -> None:
        self.rig = scene.rig if scene is not None else rig
        if self.rig not in rigmodel.ARM_PREFIXES:
            raise UnknownNameError("rig", rig, list(rigmodel.ARM_PREFIXES))
        self.scene = scene
        xml = rigmodel.compose_xml(self.rig, scene)
        self.model = mujoco.MjModel.from_xml_string(xml)
        rigmodel.apply_jitter(self.model, scene)
        self._model_key = hashlib.sha1(
            (xml + repr(scene.light_diffuse if scene else "")).encode()
        ).hexdigest()
        self.data = mujoco.MjData(self.model)
        self.render_segmentation = render_segmentation
        m = self.model
        self._arms = {
            name: rigmodel.index_arm(m, name, p)
            for name, p in rigmodel.ARM_PREFIXES[self.rig].items()
        }
        self._arm_list = list(self._arms.values())
        self._spec = rigmodel.robot_spec(self.rig, self._arms)
        self._contacts = ContactReader(m, self._arm_list)
        robot = set().union(*(a.body_ids for a in self._arm_list))
        robot |= {m.body(f"{a.prefix}base_link").id for a in self._arm_list}
        self._robot_bodies = frozenset(robot)
        self._kin = {
            n: MujocoKinematics(m, self.data, a, self._arms, self._robot_bodies)
            for n, a in self._arms.items()
        }
        names = tuple(scene.object_bodies) if scene else ()
        bodies = [m.body(b).name for b in range(m.nbody)]
        for n in names:
            if n not in bodies:
                raise UnknownNameError("scene body", n, [b for b in bodies if b])
        self._index = privileged.index_scene(m, self._arm_list, names, self._robot_bodies)
        self._objects = dict(self._index.objects)
        self._body_object = dict(self._index.body_object)
        labels = np.zeros(m.ngeom, dtype=np.int32)
        ids = {n: k + 1 for k, n in enumerate(names)}
        for g in range(m.ngeom):
            obj = self._body_object.get(int(m.geom_bodyid[g]))
            labels[g] = ids[obj] if obj else 0
        self._renderer = _render.CameraRenderer(m, labels, image_size_px)
        self.rng = np.random.default_rng(scene.seed if scene else 0)
        self._estop = False
        self._estop_reason = ""
        self._ticks = 0
        self._version = 0
        self._stale = False
        self._pads_version = self._forces_version = -1
        self._pads_cache: list[Any] = []
        self._forces_cache = np.zeros(len(self._arm_list))
        self._noise_base: BaseParams | None = None
        self._noise: NoiseState | None = None
        self.reset()
        self.apply_noise(noise)

    # --- setup -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the initial state: home keyframe for the arms, scene bodies as authored."""
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        key = m.key("home").id
        for a in self._arm_list:
            d.qpos[a.qpos_adr] = m.key_qpos[key][a.qpos_adr]
            d.qpos[a.finger_qpos_adr] = m.key_qpos[key][a.finger_qpos_adr]
        d.ctrl[:] = m.key_ctrl[key]
        mujoco.mj_forward(m, d)
        self._invalidate()
        self._targets = {n: d.qpos[a.qpos_adr].copy() for n, a in self._arms.items()}
        self._grip_cmd = {n: float(d.ctrl[a.finger_act_ids].sum()) for n, a in self._arms.items()}
        self._ever_held = dict.fromkeys(self._objects, False)
        self._initial = {n: (d.xpos[b].copy(), d.xquat[b].copy()) for n, b in self._objects.items()}
        self._estop = False
        self._ticks = 0

    # --- description (spec, kinematics: ArmTable) ----------------------------------------------
    @property
    def object_names(self) -> tuple[str, ...]:
        return tuple(self._objects)

    # --- sensing (time_s: SimState) -----------------------------------------------------------
    def capture(
        self, cameras: Sequence[str] | None = None, state: mujoco.MjData | None = None
    ) -> dict[str, CameraFrame]:
        """Frames of ``cameras`` (all by default) of the live data, or of ``state``, a copy from
        :meth:`state_copy` (rendered while the live data steps on, e.g. the PiPER emulator's
        cameras: rendering must not stop its controller loop)."""
        data = self._fresh() if state is None else state
        names = list(self._spec.cameras if cameras is None else cameras)
        for c in names:
            if c not in self._spec.cameras:
                raise UnknownNameError("camera", c, list(self._spec.cameras))
        frames = {
            c: self._renderer.render(data, c, float(data.time), self.render_segmentation)
            for c in names
        }
        noise = self._noise
        return frames if noise is None else {c: noise.perturb(f) for c, f in frames.items()}

    def state_copy(self) -> mujoco.MjData:
        """A copy of the live data with its derived quantities up to date (see :meth:`capture`)."""
        out = mujoco.MjData(self.model)
        mujoco.mj_copyData(out, self.model, self._fresh())
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
        self._fresh()
        return site_pose(self.data, a.tcp_site)

    def jaw_opening_m(self, arm: str) -> float:
        a = self._arm(arm)
        return float(self.data.qpos[a.finger_qpos_adr].sum())

    def gripper(self, arm: str) -> GripperState:
        a = self._arm(arm)
        pads = self._pads()[self._arm_list.index(a)]
        return GripperState(
            self.jaw_opening_m(arm),
            self._grip_cmd[arm],
            pads.normal_force_n,
            pads.held_body is not None,
            self.time_s(),
        )

    def contact_force_n(self, arm: str) -> float:
        a = self._arm(arm)
        return float(self._forces()[self._arm_list.index(a)])

    # readings cached per physics state (invalidated whenever the state changes)
    def _invalidate(self) -> None:
        self._version += 1

    def _fresh(self) -> mujoco.MjData:
        """Live data with derived quantities (poses, contacts, sensors) up to date."""
        if self._stale:
            mujoco.mj_forward(self.model, self.data)
            self._stale = False
        return self.data

    def _pads(self) -> list[Any]:
        self._fresh()
        if self._pads_version != self._version:
            self._pads_cache = self._contacts.pads(self.data)
            self._pads_version = self._version
        return self._pads_cache

    def _forces(self) -> np.ndarray:
        self._fresh()
        if self._forces_version != self._version:
            self._forces_cache = self._contacts.arm_forces_n(self.data)
            self._forces_version = self._version
        return self._forces_cache

    # --- commanding ----------------------------------------------------------------------------
    def servo(
        self, q_targets: Mapping[str, np.ndarray], duration_s: float, guard: ForceGuard
    ) -> TickReport:
        if self._estop:
            raise EStopError(f"e-stop latched ({self._estop_reason}); reset it before moving")
        m, d = self.model, self.data
        if not (np.isfinite(duration_s) and duration_s > 0):
            raise InvalidArgumentError(f"duration_s must be positive, got {duration_s!r}")
        cmd: dict[str, np.ndarray] = {}
        for name, q in q_targets.items():
            a = self._arm(name)
            q = np.clip(as_vector(q, 6, f"q_targets[{name}]"), a.lower_rad, a.upper_rad)
            step = rigmodel.MAX_VEL_RAD_S * duration_s
            cmd[name] = self._targets[name] + np.clip(q - self._targets[name], -step, step)
        for name, q in cmd.items():
            self._targets[name] = q
            d.ctrl[self._arms[name].act_ids] = (
                q if self._noise is None else q + self._noise.ctrl_offset(name)
            )
        watched = [self._arm_list.index(self._arms[n]) for n in (cmd or self._arms)]
        n_sub = max(1, int(round(duration_s / m.opt.timestep)))
        tick = guarded_substeps(m, d, self._contacts, n_sub, watched, guard)
        if tick.emergency:
            self._hold(list(self._arms))
        elif tick.stopped:
            self._hold(list(cmd) or list(self._arms))
        self._ticks += 1
        self._stale = True  # readings reflect the state after the last substep (see _fresh)
        self._invalidate()
        last = tick.last_forces_n
        self._forces_cache = np.zeros(len(self._arm_list)) if last is None else np.array(last)
        self._forces_version = self._version
        self._update_held()
        return TickReport(
            elapsed_s=tick.substeps * m.opt.timestep,
            substeps=tick.substeps,
            peak_force_n=tick.peak_force_n,
            stopped=tick.stopped,
            emergency=tick.emergency,
            q_applied={n: self._targets[n].copy() for n in cmd},
        )

    def _hold(self, arms: Sequence[str]) -> None:
        for name in arms:
            a = self._arms[name]
            self._targets[name] = self.data.qpos[a.qpos_adr].copy()
            self.data.ctrl[a.act_ids] = self._targets[name]

    def command_gripper(self, arm: str, opening_m: float) -> float:
        a = self._arm(arm)
        if self._estop:
            raise EStopError(f"e-stop latched ({self._estop_reason}); reset it before moving")
        v = float(as_vector(opening_m, 1, "opening_m")[0])
        v = float(np.clip(v, 0.0, 2 * rigmodel.FINGER_STROKE_M))
        self._grip_cmd[arm] = v
        self.data.ctrl[a.finger_act_ids] = v / 2
        return v

    def step(self, n: int = 1) -> None:
        """Advance physics ``n`` raw substeps (no guard; benchmarks and settling only)."""
        for _ in range(n):
            mujoco.mj_step(self.model, self.data)
        self._stale = self._stale or n > 0
        self._invalidate()

    # --- safety --------------------------------------------------------------------------------
    def estop(self, reason: str = "") -> None:
        self._estop = True
        self._estop_reason = reason or "operator"
        self._hold(list(self._arms))
        for name, a in self._arms.items():
            self._grip_cmd[name] = self.jaw_opening_m(name)
            self.data.ctrl[a.finger_act_ids] = self.data.qpos[a.finger_qpos_adr]

    def reset_estop(self) -> None:
        self._estop = False
        self._estop_reason = ""
        self._hold(list(self._arms))

    # --- simulation only (estopped and the snapshot's content: SimState) ----------------------
    def snapshot(self) -> MujocoSnapshot:
        return self._take_snapshot({} if self._noise is None else {"noise": self._noise.state()})

    def restore(self, snapshot: MujocoSnapshot) -> None:
        snapshot = self._load_snapshot(snapshot)
        self._stale = True  # derived quantities are recomputed lazily (see _fresh)
        self._invalidate()
        saved = snapshot.extra.get("noise")
        if (saved or {}).get("draw") != (self._noise.state()["draw"] if self._noise else None):
            self.apply_noise(None if saved is None else saved["draw"])
        if saved is not None and self._noise is not None:
            self._noise.set_streams(saved)

    # --- stochastic mode (:mod:`.noise`) ------------------------------------------------------
    @property
    def noise_draw(self) -> NoiseDraw | None:
        """The draw of the stochastic mode, or None (deterministic)."""
        return None if self._noise is None else self._noise.draw

    def apply_noise(self, draw: NoiseDraw | Mapping[str, Any] | None) -> None:
        """Start the noise of ``draw`` from the current physical state (``None``: deterministic).
        Restoring a snapshot brings back the noise it was taken with."""
        draw = NoiseDraw.coerce(draw)
        if draw is not None or self._noise is not None:
            self._noise_base, self._noise = switch_noise(
                self.model,
                self._noise_base,
                list(self._body_object),
                draw,
                {n: len(a.act_ids) for n, a in self._arms.items()},
            )
            self._stale = True
            self._invalidate()

    def _held_by(self) -> dict[str, str | None]:
        """Arm -> name of the object (or body) held between both pads."""
        out: dict[str, str | None] = {}
        for a, pads in zip(self._arm_list, self._pads(), strict=True):
            b = pads.held_body
            out[a.name] = None if b is None else self._body_object.get(b, self.model.body(b).name)
        return out

    def _update_held(self) -> None:
        for obj in self._held_by().values():
            if obj in self._ever_held:
                self._ever_held[obj] = True

    def privileged_state(self) -> PrivilegedState:
        """Simulator ground truth (typed; see :mod:`captain_ros.core.privileged`). Never for
        policies."""
        d = self._fresh()
        return privileged.privileged_state(
            self.model,
            d,
            self._index,
            self._arm_list,
            self._pads(),
            self._forces(),
            self._grip_cmd,
            self._initial,
            self._ever_held,
            self._contacts.touching(d),
        )

    def close(self) -> None:
        self._renderer.close()
