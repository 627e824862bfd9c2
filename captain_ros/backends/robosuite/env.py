"""Building a robosuite environment for the backend and indexing its Panda arm(s).

robosuite is optional (``pip install -e '.[robosuite]'`` plus ``scripts/setup_robosuite.sh``);
:func:`import_robosuite` gives one clear line naming the extra when it is absent.

The environment is robosuite's own (``robosuite.make``): its scene, object placement and
randomisation, seeded from the episode's seed. Its arm controller is robosuite's
``JOINT_POSITION`` controller with absolute input (the joint-space impedance law
``tau = M (kp (q* - q) - kd qdot) + bias`` on the Panda's torque actuators); the backend sets its
goal once per control tick and runs it at every 2 ms physics substep, as ``env.step`` does, but
with the force guard between substeps. The jaws are the gripper's own position actuators.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from captain_ros.backends.mujoco.model import ArmIndex, subtree_bodies
from captain_ros.core.errors import NotSupportedError
from captain_ros.core.geometry import Pose
from captain_ros.core.types import ArmSpec, RobotSpec

MISSING = (
    "the robosuite backend needs the optional extra: pip install -e '.[robosuite]' && "
    "scripts/setup_robosuite.sh (robosuite 1.5.2, --no-deps)"
)
JOINT_KP = 400.0
"""Stiffness of robosuite's joint-position controller [1/s^2] (its mass-matrix-scaled law): a
critically damped time constant of 50 ms, so a 20 ms-tick trajectory settles within 2 mm."""
PANDA_MAX_VEL_RAD_S = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])
PANDA_REACH_M = 0.855
PANDA_JAW_MAX_M = 0.08
PANDA_PAD_SIZE_M = (0.017, 0.017, 0.004)


def import_robosuite() -> Any:
    """``robosuite`` with the MuJoCo 4 patches applied, or :class:`NotSupportedError` (one line)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        import robosuite
    except ImportError as exc:
        raise NotSupportedError(f"{MISSING} [{exc}]") from None
    from captain_ros.backends.robosuite import compat

    compat.apply()
    for name in ("robosuite_logs", "robosuite"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return robosuite


def controller_config(robosuite: Any, robot: str = "Panda") -> dict[str, Any]:
    """robosuite's BASIC composite config with the arm on absolute joint-position control."""
    from robosuite.controllers import load_composite_controller_config

    cfg = load_composite_controller_config(controller="BASIC", robot=robot)
    # a Panda has one arm, "right"; the other parts of the BASIC config only raise warnings
    cfg["body_parts"] = {k: v for k, v in cfg["body_parts"].items() if k == "right"}
    for arm in cfg["body_parts"].values():
        gripper = arm.get("gripper", {"type": "GRIP"})
        arm.clear()
        arm.update(
            {
                "type": "JOINT_POSITION",
                "input_type": "absolute",
                "input_max": 10.0,
                "input_min": -10.0,
                "output_max": 10.0,
                "output_min": -10.0,
                "kp": JOINT_KP,
                "damping_ratio": 1.0,
                "impedance_mode": "fixed",
                "kp_limits": [0, 1000],
                "damping_ratio_limits": [0, 10],
                "qpos_limits": None,
                "interpolation": None,
                "ramp_ratio": 0.2,
                "gripper": gripper,
            }
        )
    return cfg


def make_env(env_name: str, robots: tuple[str, ...], seed: int, env_kwargs: dict[str, Any]) -> Any:
    """``robosuite.make(env_name)`` without robosuite's renderers (the backend renders itself)."""
    robosuite = import_robosuite()
    cfg = controller_config(robosuite, robots[0])
    env = robosuite.make(
        env_name,
        robots=list(robots) if len(robots) > 1 else robots[0],
        controller_configs=cfg,
        has_renderer=False,
        has_offscreen_renderer=False,
        use_camera_obs=False,
        use_object_obs=False,
        hard_reset=False,
        ignore_done=True,
        control_freq=20,
        seed=int(seed),
        **env_kwargs,
    )
    env.reset()
    return env


@dataclass(frozen=True)
class PandaArm:
    """One robosuite robot as the backend drives it: model addresses plus its controller."""

    index: ArmIndex
    robot: Any
    controller: Any
    base_body: int
    gripper_act_sign: np.ndarray  # (2,) +1 / -1: finger_joint1 opens positive, joint2 negative


def index_robot(model: mujoco.MjModel, robot: Any, arm_name: str, k: int) -> PandaArm:
    """The :class:`ArmIndex` (the MuJoCo backend's type, so its contact and privileged readers
    apply) of robosuite robot ``k``: 7 arm joints, two finger joints, pads, grip site."""
    part = "right"
    joints = tuple(robot.robot_joints)
    jids = [model.joint(j).id for j in joints]
    fingers = list(robot.gripper_joints[part])
    fids = [model.joint(f).id for f in fingers]
    grip = robot.gripper[part]
    pads = grip.important_geoms["left_fingerpad"][0], grip.important_geoms["right_fingerpad"][0]
    acts = [int(i) for i in robot._ref_arm_joint_actuator_indexes]
    finger_act_ids = [a for a in range(model.nu) if int(model.actuator_trnid[a][0]) in fids]
    base = model.body(robot.robot_model.root_body).id
    index = ArmIndex(
        name=arm_name,
        prefix=f"robot{k}_",
        joint_names=joints,
        qpos_adr=np.array([model.jnt_qposadr[j] for j in jids]),
        dof_adr=np.array([model.jnt_dofadr[j] for j in jids]),
        act_ids=np.array(acts),
        finger_qpos_adr=np.array([model.jnt_qposadr[j] for j in fids]),
        finger_act_ids=np.array(finger_act_ids),
        body_ids=subtree_bodies(model, base) - {base},
        pad_geom_ids=(model.geom(pads[0]).id, model.geom(pads[1]).id),
        tcp_site=int(robot.eef_site_id[part]),
        wrist_camera="wrist" if k == 0 else f"wrist{k}",
        lower_rad=np.array([model.jnt_range[j][0] for j in jids]),
        upper_rad=np.array([model.jnt_range[j][1] for j in jids]),
    )
    sign = np.array([1.0 if model.jnt_range[j][1] > 0 else -1.0 for j in fids])
    return PandaArm(index, robot, robot.composite_controller.part_controllers[part], base, sign)


def table_box(env: Any, margin_m: float = 0.1) -> tuple[float, float, float, float]:
    """(x_min, y_min, x_max, y_max) of the table top plus ``margin_m`` [m]: the workspace box
    targets must lie in (robosuite's tables are centred at ``table_offset``)."""
    size = np.asarray(getattr(env, "table_full_size", (0.8, 0.8, 0.05)), dtype=float)
    centre = np.asarray(getattr(env, "table_offset", (0.0, 0.0, 0.8)), dtype=float)
    half = size[:2] / 2 + margin_m
    return (
        float(centre[0] - half[0]),
        float(centre[1] - half[1]),
        float(centre[0] + half[0]),
        float(centre[1] + half[1]),
    )


def robot_spec(
    name: str,
    arms: dict[str, PandaArm],
    data: mujoco.MjData,
    origin_m: np.ndarray,
    cameras: tuple[str, ...],
    table_xy: tuple[float, float, float, float],
) -> RobotSpec:
    """The :class:`RobotSpec` of the robots (bases in the backend's table-top frame). The
    workspace box spans from 10 cm behind the rearmost base to 1 m in front of the foremost,
    +-0.9 m sideways, and at least the table (``table_xy`` from :func:`table_box`: two-arm
    tasks put the bases beside the table)."""
    specs = []
    for arm, p in arms.items():
        a = p.index
        base = Pose(data.xpos[p.base_body] - origin_m, data.xquat[p.base_body].copy())
        specs.append(
            ArmSpec(
                name=arm,
                joint_names=a.joint_names,
                lower_rad=a.lower_rad,
                upper_rad=a.upper_rad,
                max_velocity_rad_s=PANDA_MAX_VEL_RAD_S.copy(),
                base_pose=base,
                reach_m=PANDA_REACH_M,
                jaw_max_opening_m=PANDA_JAW_MAX_M,
                pad_size_m=PANDA_PAD_SIZE_M,
                wrist_camera=a.wrist_camera,
            )
        )
    bases = np.array([s.base_pose.position_m for s in specs])
    lo = np.array([min(table_xy[0], bases[:, 0].min() - 0.1), min(table_xy[1], -0.9), -0.02])
    hi = np.array([max(table_xy[2], bases[:, 0].max() + 1.0), max(table_xy[3], 0.9), 0.9])
    return RobotSpec(
        name=name,
        arms=tuple(specs),
        cameras=cameras,
        head_camera="head",
        workspace_min_m=lo,
        workspace_max_m=hi,
    )
