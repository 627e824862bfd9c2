"""The humanoid pair in MuJoCo behind :class:`~captain_ros.backends.humanoid.bridge.HumanoidBridge`.

Rates follow the paper's deployment: controllers (locomotion model, arm ramps, fall checks) at
50 Hz, the command writer and physics at 500 Hz (``dt`` 2 ms). The base servos track the
locomotion model's reference (:mod:`~captain_ros.backends.humanoid.locomotion`), the arm servos
the support adapter's targets (:mod:`~captain_ros.backends.humanoid.support`). The scene starts
with the payload resting on the start pedestal and both robots squatting 5 cm with their palms
just under the payload's ends (``pre_support``); the initialization skill ramps them to the
support posture and stands them up, which lifts the payload.

Safety below the interface: velocity/height/arm commands are clipped; velocity commands expire
after ``command_timeout_s``; a robot whose torso tilts past ``max_tilt_rad`` counts as fallen and
its controllers hold; the e-stop halts both robots and latches until :meth:`reset_estop`.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from typing import Any

import mujoco
import numpy as np

from captain_ros.backends.humanoid import measure, mjcf
from captain_ros.backends.humanoid.bridge import HumanoidBridge
from captain_ros.backends.humanoid.layouts import Layout, get_layout
from captain_ros.backends.humanoid.locomotion import Locomotion, LocoState
from captain_ros.backends.humanoid.monitor import copy_monitor, new_monitor, update_monitor
from captain_ros.backends.humanoid.snapshot import HumanoidSnapshot
from captain_ros.backends.humanoid.support import ArmRamp, posture
from captain_ros.backends.humanoid.types import (
    AdvanceReport,
    ArmJoints,
    BaseLimits,
    BaseVelocity,
    HumanoidSpec,
    HumanoidState,
    PairSpec,
    wrap_angle,
)
from captain_ros.core.errors import EStopError, InvalidArgumentError

SPACING_M = 1.46
"""Distance between the two robots' bases across the payload [m]."""
START_SUPPORT_TOP_M = 0.80
START_HEIGHT_OFFSET_M = -0.05
SUBSTEPS = 10
_MODELS: dict[str, mujoco.MjModel] = {}


class MujocoHumanoidPair(HumanoidBridge):
    """Two primitive-geometry humanoids, a free payload and a corridor layout.

    Args:
        layout: Layout name or object (``base``, ``l2``, ``l3``, ``l4``).
        seed: Seeds the tracking errors of the locomotion model.
        noise: Scale of the locomotion tracking errors and bobbing (0 = ideal tracking).
        limits: Locomotion limits (default :class:`BaseLimits`).
    """

    def __init__(
        self,
        layout: str | Layout = "base",
        seed: int = 0,
        noise: float = 1.0,
        limits: BaseLimits | None = None,
    ) -> None:
        self.layout = get_layout(layout) if isinstance(layout, str) else layout
        if not math.isfinite(noise) or noise < 0:
            raise InvalidArgumentError("noise must be a finite number >= 0")
        self.model_key = f"{self.layout.name}:{hash(self.layout)}"
        if self.model_key not in _MODELS:
            xml = mjcf.build_xml(
                self.layout,
                SPACING_M,
                START_SUPPORT_TOP_M + mjcf.PAYLOAD_HALF_M[2],
                START_SUPPORT_TOP_M,
            )
            _MODELS[self.model_key] = mujoco.MjModel.from_xml_string(xml)
        self.model = _MODELS[self.model_key]
        self.data = mujoco.MjData(self.model)
        self.idx = measure.SceneIndex(self.model)
        lim = limits or BaseLimits()
        ri0 = self.idx.robots["robot_a"]
        arms = ArmJoints(
            ri0.arm_joint_names,
            ri0.arm_lower,
            ri0.arm_upper,
            np.array(mjcf.ARM_TORQUE_NM * 2),
            mjcf.ARM_KP_NM_RAD,
            mjcf.ARM_KD_NM_S_RAD,
        )
        robots = []
        for r, ri in self.idx.robots.items():
            robots.append(
                HumanoidSpec(
                    r,
                    lim,
                    replace(arms, joint_names=ri.arm_joint_names),
                    mjcf.ANKLE_Z_M + mjcf.PELVIS_Z_M,
                )
            )
        self._spec = PairSpec(
            tuple(robots),
            control_dt_s=SUBSTEPS * float(self.model.opt.timestep),
            physics_dt_s=float(self.model.opt.timestep),
        )
        self.loco = Locomotion(lim, self._spec.control_dt_s, noise)
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self._estop, self._estop_reason = False, ""
        self._fallen: dict[str, bool] = {r: False for r in self.idx.robots}
        self._loco: dict[str, LocoState] = {}
        self._ramps: dict[str, ArmRamp] = {}
        self.ticks = 0
        self._monitor: dict[str, Any] = {}
        self._reset_scene()

    # --- construction ----------------------------------------------------------------------------
    def _reset_scene(self) -> None:
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        c = self.layout.start_xy
        h = self.layout.start_heading_rad
        axis = np.array([-math.sin(h), math.cos(h)])  # robot_a -> robot_b, left of travel
        pre = posture("pre_support")
        for r, sign in (("robot_a", -1.0), ("robot_b", 1.0)):
            ri = self.idx.robots[r]
            xy = c + sign * axis * SPACING_M / 2.0
            yaw = wrap_angle(h + (math.pi / 2 if r == "robot_a" else -math.pi / 2))
            d.qpos[ri.qadr["x"]], d.qpos[ri.qadr["y"]], d.qpos[ri.qadr["yaw"]] = xy[0], xy[1], yaw
            d.qpos[ri.qadr["height"]] = START_HEIGHT_OFFSET_M
            d.qpos[ri.arm_qadr] = pre
            self._loco[r] = LocoState(
                (float(xy[0]), float(xy[1]), yaw),
                height_ref_m=START_HEIGHT_OFFSET_M,
                height_target_m=START_HEIGHT_OFFSET_M,
            )
            self._ramps[r] = ArmRamp(pre.copy(), pre.copy(), 0.0, 0.0)
        self._write_controls()
        mujoco.mj_forward(m, d)
        for _ in range(150):  # let the payload settle on the start pedestal
            mujoco.mj_step(m, d)
        d.time = 0.0
        self.reset_monitor()

    def _write_controls(self, heights: dict[str, float] | None = None) -> None:
        d = self.data
        for r, ri in self.idx.robots.items():
            s = self._loco[r]
            d.ctrl[ri.act["x"]], d.ctrl[ri.act["y"]], d.ctrl[ri.act["yaw"]] = s.ref
            d.ctrl[ri.act["height"]] = s.height_ref_m if heights is None else heights[r]
            d.ctrl[ri.act["pitch"]] = d.ctrl[ri.act["roll"]] = 0.0
            d.ctrl[ri.arm_act] = self._ramps[r].at(float(d.time))

    # --- description / sensing -------------------------------------------------------------------
    @property
    def spec(self) -> PairSpec:
        return self._spec

    def time_s(self) -> float:
        return float(self.data.time)

    def _robot(self, robot: str) -> measure.RobotIndex:
        if robot not in self.idx.robots:
            self._spec.robot(robot)  # raises UnknownNameError listing the robots
        return self.idx.robots[robot]

    def state(self, robot: str) -> HumanoidState:
        from captain_ros.backends.humanoid.types import Pose2D

        ri = self._robot(robot)
        d = self.data
        q, v = d.qpos, d.qvel
        yaw = float(q[ri.qadr["yaw"]])
        c, s = math.cos(yaw), math.sin(yaw)
        vx_w, vy_w = float(v[ri.dadr["x"]]), float(v[ri.dadr["y"]])
        cs = measure.contacts(self.model, d, self.idx)
        return HumanoidState(
            robot,
            Pose2D(float(q[ri.qadr["x"]]), float(q[ri.qadr["y"]]), wrap_angle(yaw)),
            BaseVelocity(c * vx_w + s * vy_w, -s * vx_w + c * vy_w, float(v[ri.dadr["yaw"]])),
            float(q[ri.qadr["height"]]),
            measure.robot_tilt_rad(d, ri),
            q[ri.arm_qadr].copy(),
            self._ramps[robot].at(float(d.time)),
            d.actuator_force[ri.arm_act].copy(),
            cs.palm_force_n[robot],
            self._fallen[robot],
            float(d.time),
        )

    # --- commands --------------------------------------------------------------------------------
    def _check_estop(self) -> None:
        if self._estop:
            raise EStopError(f"e-stop latched ({self._estop_reason}); reset it to move again")

    def command_velocity(self, robot: str, velocity: BaseVelocity) -> BaseVelocity:
        self._robot(robot)
        self._check_estop()
        if self._fallen[robot]:
            return BaseVelocity()
        self._loco[robot], applied = self.loco.command(self._loco[robot], velocity, self.time_s())
        return applied

    def command_height(self, robot: str, offset_m: float) -> float:
        self._robot(robot)
        self._check_estop()
        if not isinstance(offset_m, (int, float)) or not math.isfinite(offset_m):
            raise InvalidArgumentError("offset_m must be a finite number [m]")
        self._loco[robot], applied = self.loco.command_height(self._loco[robot], float(offset_m))
        return applied

    def command_arms(self, robot: str, q_rad: np.ndarray, ramp_s: float) -> np.ndarray:
        ri = self._robot(robot)
        self._check_estop()
        q = np.asarray(q_rad, dtype=float)
        if q.shape != (14,) or not np.all(np.isfinite(q)):
            raise InvalidArgumentError("q_rad must be 14 finite arm joint targets [rad]")
        if not isinstance(ramp_s, (int, float)) or not math.isfinite(ramp_s) or ramp_s < 0:
            raise InvalidArgumentError("ramp_s must be a finite duration >= 0 [s]")
        goal = np.clip(q, ri.arm_lower, ri.arm_upper)
        now = self.time_s()
        self._ramps[robot] = ArmRamp(self._ramps[robot].at(now), goal, now, float(ramp_s))
        return goal.copy()

    def advance(self, duration_s: float) -> AdvanceReport:
        if (
            not isinstance(duration_s, (int, float))
            or not math.isfinite(duration_s)
            or duration_s < 0
        ):
            raise InvalidArgumentError("duration_s must be a finite duration >= 0 [s]")
        m, d = self.model, self.data
        n = int(round(duration_s / self._spec.control_dt_s))
        expired: set[str] = set()
        for k in range(n):
            if self._estop:
                return AdvanceReport(
                    k * self._spec.control_dt_s,
                    True,
                    f"e-stop: {self._estop_reason}",
                    tuple(sorted(expired)),
                )
            heights = {}
            for r in self.idx.robots:
                s, h = self.loco.step(self._loco[r], self.time_s(), self.rng)
                if s.expired and not self._loco[r].expired:
                    expired.add(r)
                self._loco[r], heights[r] = s, h
            self._write_controls(heights)
            for _ in range(SUBSTEPS):
                mujoco.mj_step(m, d)
            self.ticks += 1
            update_monitor(self._monitor, self.model, d, self.idx)
            for r, ri in self.idx.robots.items():
                if (
                    not self._fallen[r]
                    and measure.robot_tilt_rad(d, ri) > self.loco.limits.max_tilt_rad
                ):
                    self._fallen[r] = True
                    self._loco[r] = self.loco.halt(self._loco[r])
            if any(self._fallen.values()):
                who = ", ".join(r for r, f in self._fallen.items() if f)
                return AdvanceReport(
                    (k + 1) * self._spec.control_dt_s,
                    True,
                    f"fallen: {who}",
                    tuple(sorted(expired)),
                )
        return AdvanceReport(n * self._spec.control_dt_s, False, "", tuple(sorted(expired)))

    # --- safety ----------------------------------------------------------------------------------
    def estop(self, reason: str = "") -> None:
        self._estop, self._estop_reason = True, reason or "requested"
        now = self.time_s()
        for r in self.idx.robots:
            self._loco[r] = self.loco.halt(self._loco[r])
            held = self._ramps[r].at(now)
            self._ramps[r] = ArmRamp(held, held, now, 0.0)

    def reset_estop(self) -> None:
        self._estop, self._estop_reason = False, ""

    @property
    def estopped(self) -> bool:
        return self._estop

    # --- monitor (:mod:`.monitor`) / privileged ----------------------------------------------------
    def reset_monitor(self) -> None:
        """Start the safety monitor (:mod:`.monitor`) again from the current state."""
        self._monitor = new_monitor(self.idx.robots)
        update_monitor(self._monitor, self.model, self.data, self.idx)

    def digest(self) -> str:
        """Hash of the full state (physics and controllers): equal digests = identical state."""
        h = hashlib.sha256(self._physics().tobytes())
        h.update(
            repr(
                (sorted(self._loco.items()), self._estop, sorted(self._fallen.items()), self.ticks)
            ).encode()
        )
        for r in sorted(self._ramps):
            rp = self._ramps[r]
            h.update(rp.start.tobytes() + rp.goal.tobytes() + repr((rp.t0_s, rp.ramp_s)).encode())
        h.update(repr(self.rng.bit_generator.state).encode())
        return h.hexdigest()[:20]

    def privileged_state(self) -> dict[str, Any]:
        d = self.data
        pos, quat, rot = measure.payload_pose(d, self.idx)
        cs = measure.contacts(self.model, d, self.idx)
        dof = self.idx.payload_dadr
        return {
            "time_s": float(d.time),
            "layout": self.layout.name,
            "digest": self.digest(),
            "payload": {
                "position_m": pos.tolist(),
                "quat_wxyz": quat.tolist(),
                "tilt_rad": measure.tilt_rad(rot),
                "lowest_z_m": measure.lowest_z_m(pos, rot),
                "axis_xy": rot[:2, 0].tolist(),
                "linear_velocity_m_s": d.qvel[dof : dof + 3].tolist(),
                "touches": list(cs.payload_touches),
            },
            "robots": {r: self.state(r).to_dict() for r in self.idx.robots},
            "palm_force_n": {r: list(v) for r, v in cs.palm_force_n.items()},
            "environment_contacts": list(cs.environment),
            "monitor": copy_monitor(self._monitor),
            "estop": self._estop,
            "fallen": dict(self._fallen),
        }

    # --- snapshots -------------------------------------------------------------------------------
    def _physics(self) -> np.ndarray:
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        out = np.empty(mujoco.mj_stateSize(self.model, spec))
        mujoco.mj_getState(self.model, self.data, out, spec)
        return out

    def snapshot(self) -> HumanoidSnapshot:
        return HumanoidSnapshot(
            self.model_key,
            self._physics(),
            dict(self._loco),
            {
                r: (rp.start.copy(), rp.goal.copy(), rp.t0_s, rp.ramp_s)
                for r, rp in self._ramps.items()
            },
            self._estop,
            self._estop_reason,
            dict(self._fallen),
            dict(self.rng.bit_generator.state),
            self.ticks,
            copy_monitor(self._monitor),
            self.digest(),
        )

    def restore(self, snapshot: HumanoidSnapshot) -> str:
        if not isinstance(snapshot, HumanoidSnapshot) or snapshot.model_key != self.model_key:
            raise InvalidArgumentError("snapshot is not from this layout's humanoid scene")
        mujoco.mj_setState(
            self.model, self.data, snapshot.physics, mujoco.mjtState.mjSTATE_INTEGRATION
        )
        mujoco.mj_forward(self.model, self.data)
        self._loco = dict(snapshot.loco)
        self._ramps = {
            r: ArmRamp(a.copy(), b.copy(), t0, rs) for r, (a, b, t0, rs) in snapshot.ramps.items()
        }
        self._estop, self._estop_reason = snapshot.estop, snapshot.estop_reason
        self._fallen = dict(snapshot.fallen)
        self.rng.bit_generator.state = snapshot.rng_state
        self.ticks = snapshot.ticks
        self._monitor = copy_monitor(snapshot.monitor)
        return self.digest()
