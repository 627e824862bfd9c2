"""Privileged simulator state of a :class:`MujocoBackend` (ground truth for tasks and the critic).

The schema is documented in :mod:`captain_ros.backends.mujoco.backend`. Policies never see it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from captain_ros.backends.mujoco.backend import MujocoBackend


def privileged_state(sim: MujocoBackend) -> dict[str, Any]:
    """Simulator ground truth of ``sim`` (see :mod:`captain_ros.backends.mujoco.backend`)."""
    m, d = sim.model, sim._fresh()
    pads = sim._pads()
    held = sim._held_by()
    touching: dict[int, set[str]] = {}
    for b1, b2 in sim._contacts.touching(d):
        touching.setdefault(b1, set()).add(_body_label(sim, b2))
        touching.setdefault(b2, set()).add(_body_label(sim, b1))
    objects: dict[str, Any] = {}
    for name, b in sim._objects.items():
        sub = [x for x, o in sim._body_object.items() if o == name]
        holders = [arm for arm, o in held.items() if o == name]
        objects[name] = {
            "position_m": d.xpos[b].tolist(), "quat_wxyz": d.xquat[b].tolist(),
            "initial_position_m": sim._initial[name][0].tolist(),
            "initial_quat_wxyz": sim._initial[name][1].tolist(),
            "held_by": holders[0] if holders else None, "held": bool(holders),
            "ever_held": sim._ever_held[name],
            "pad_contacts": {a.name: int(any(x in p.left for x in sub)) + int(any(x in p.right for x in sub))
                             for a, p in zip(sim._arm_list, pads, strict=True)},
            "touching": sorted(set().union(*(touching.get(x, set()) for x in sub)) - {name}),
        }
    forces = sim._forces()
    arms = {}
    for k, a in enumerate(sim._arm_list):
        pose = sim.ee_pose(a.name)
        arms[a.name] = {
            "tcp_position_m": pose.position_m.tolist(), "tcp_quat_wxyz": pose.quat_wxyz.tolist(),
            "q_rad": d.qpos[a.qpos_adr].tolist(), "jaw_opening_m": sim.jaw_opening_m(a.name),
            "jaw_command_m": sim._grip_cmd[a.name], "holding": held[a.name] is not None,
            "held_object": held[a.name], "contact_force_n": float(forces[k])}
    return {
        "time_s": float(d.time), "objects": objects, "arms": arms,
        "joints": {j: float(d.qpos[m.jnt_qposadr[m.joint(j).id]]) for j in sim._articulations},
        "bodies": {m.body(b).name: {"position_m": d.xpos[b].tolist(), "quat_wxyz": d.xquat[b].tolist()}
                   for b in sim._named_bodies},
    }

def _body_label(sim: MujocoBackend, b: int) -> str:
    """Object name, ``robot:<arm>`` or the MuJoCo body name of body ``b``."""
    if b in sim._body_object:
        return sim._body_object[b]
    for a in sim._arm_list:
        if b in a.body_ids:
            return f"robot:{a.name}"
    return sim.model.body(b).name or "world"
