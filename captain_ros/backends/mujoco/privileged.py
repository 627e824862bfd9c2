"""Ground truth of a MuJoCo scene as a typed :class:`~captain_ros.core.privileged.PrivilegedState`.

:class:`SceneIndex` is built once per model (which bodies are task objects, articulations,
fixtures); :func:`privileged_state` reads one instant of the simulation from explicit inputs (the
model, up-to-date data, the pad contacts and forces the backend already caches, the episode's
initial poses and ever-held flags). It knows nothing of the backend class, so the two modules do
not import each other. Policies never see this state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from captain_ros.backends.mujoco.contacts import PadContacts
from captain_ros.backends.mujoco.model import ArmIndex, site_pose
from captain_ros.core.privileged import ArmTruth, BodyPose, ObjectTruth, PrivilegedState

_ARTICULATED = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


@dataclass(frozen=True)
class SceneIndex:
    """Static indexing of a composed model.

    Attributes:
        objects: Task object name -> body id (the scene's ``object_bodies``, in order).
        body_object: Body id -> the task object it belongs to (an object's sub-bodies included).
        robot_bodies: Body ids of the arms (links, fingers, bases).
        articulations: Names of the scene's hinge/slide joints (not the robot's).
        named_bodies: Ids of the other named non-robot bodies (fixtures).
    """

    objects: Mapping[str, int]
    body_object: Mapping[int, str]
    robot_bodies: frozenset[int]
    articulations: tuple[str, ...]
    named_bodies: tuple[int, ...]

    def label(self, model: mujoco.MjModel, arms: Sequence[ArmIndex], body: int) -> str:
        """Object name, ``robot:<arm>`` or the MuJoCo body name of ``body``."""
        if body in self.body_object:
            return self.body_object[body]
        for a in arms:
            if body in a.body_ids:
                return f"robot:{a.name}"
        return model.body(body).name or "world"


def index_scene(
    model: mujoco.MjModel,
    arms: Sequence[ArmIndex],
    object_names: Sequence[str],
    robot_bodies: frozenset[int],
) -> SceneIndex:
    """Index ``model``: task objects (and every body below them), articulations, fixtures."""
    objects = {n: model.body(n).id for n in object_names}
    by_id = {oid: name for name, oid in objects.items()}
    body_object: dict[int, str] = {}
    for b in range(model.nbody):
        x = b
        while x > 0:
            if x in by_id:
                body_object[b] = by_id[x]
                break
            x = int(model.body_parentid[x])
    articulations = tuple(
        model.joint(j).name
        for j in range(model.njnt)
        if int(model.jnt_type[j]) in _ARTICULATED and int(model.jnt_bodyid[j]) not in robot_bodies
    )
    named = tuple(b for b in range(1, model.nbody) if b not in robot_bodies and model.body(b).name)
    return SceneIndex(objects, body_object, robot_bodies, articulations, named)


def privileged_state(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    index: SceneIndex,
    arms: Sequence[ArmIndex],
    pads: Sequence[PadContacts],
    forces_n: np.ndarray,
    grip_cmd_m: Mapping[str, float],
    initial: Mapping[str, tuple[np.ndarray, np.ndarray]],
    ever_held: Mapping[str, bool],
    touching_pairs: Sequence[tuple[int, int]],
) -> PrivilegedState:
    """Ground truth at the current instant (``data`` must be forwarded; ``pads``, ``forces_n``
    and ``touching_pairs`` (body pairs in contact) read from it, per arm in ``arms`` order)."""
    held = {
        a.name: (
            None
            if p.held_body is None
            else index.body_object.get(p.held_body, model.body(p.held_body).name)
        )
        for a, p in zip(arms, pads, strict=True)
    }
    touching: dict[int, set[str]] = {}
    for b1, b2 in touching_pairs:
        touching.setdefault(b1, set()).add(index.label(model, arms, b2))
        touching.setdefault(b2, set()).add(index.label(model, arms, b1))
    objects: dict[str, ObjectTruth] = {}
    for name, b in index.objects.items():
        sub = [x for x, o in index.body_object.items() if o == name]
        holders = [arm for arm, o in held.items() if o == name]
        touch: set[str] = set().union(*(touching.get(x, set()) for x in sub))
        objects[name] = ObjectTruth(
            position_m=data.xpos[b].copy(),
            quat_wxyz=data.xquat[b].copy(),
            initial_position_m=initial[name][0],
            initial_quat_wxyz=initial[name][1],
            held_by=holders[0] if holders else None,
            ever_held=bool(ever_held[name]),
            pad_contacts={
                a.name: int(any(x in p.left for x in sub)) + int(any(x in p.right for x in sub))
                for a, p in zip(arms, pads, strict=True)
            },
            touching=tuple(touch - {name}),
        )
    arm_truth: dict[str, ArmTruth] = {}
    for k, a in enumerate(arms):
        pose = site_pose(data, a.tcp_site)
        arm_truth[a.name] = ArmTruth(
            tcp_position_m=pose.position_m,
            tcp_quat_wxyz=pose.quat_wxyz,
            q_rad=data.qpos[a.qpos_adr].copy(),
            jaw_opening_m=float(data.qpos[a.finger_qpos_adr].sum()),
            jaw_command_m=float(grip_cmd_m[a.name]),
            held_object=held[a.name],
            contact_force_n=float(forces_n[k]),
        )
    joints = {
        j: float(data.qpos[model.jnt_qposadr[model.joint(j).id]]) for j in index.articulations
    }
    bodies = {
        model.body(b).name: BodyPose(data.xpos[b].copy(), data.xquat[b].copy())
        for b in index.named_bodies
    }
    return PrivilegedState(
        time_s=float(data.time), objects=objects, arms=arm_truth, joints=joints, bodies=bodies
    )
