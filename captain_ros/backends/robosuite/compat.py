"""robosuite 1.5.2 on this project's MuJoCo (4.0.0): the two places its bindings break, mended.

robosuite 1.5.2 was written against MuJoCo 3.3. On MuJoCo 4.0.0 (measured, docs/robosuite.md)
every task fails at ``make`` in exactly two places, and nothing else in make, reset, step, camera
rendering or ``mj_getState``/``mj_setState`` does:

1. ``MjModel.get_joint_qpos_addr`` / ``get_joint_qvel_addr`` (``robosuite/utils/binding_utils.py``)
   compare ``model.jnt_type[j]`` (a numpy int) with ``mujoco.mjtJoint`` members; MuJoCo 4's enums
   no longer compare equal to numpy ints, so the ``assert joint_type in (HINGE, SLIDE)`` fails for
   every joint (and a free joint would be taken for a hinge). Here the type is compared as ``int``.
2. ``Controller.update`` (``robosuite/controllers/parts/controller.py``) calls
   ``mj_fullM(model, dst, data.qM)``; MuJoCo 4 removed ``MjData.qM`` and ``mj_fullM`` now takes
   ``(model, data, dst)``. The replacement below is the same method with the new call.

:func:`apply` patches the classes once (idempotent) and checks that both patches took.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

_WIDTHS = {
    int(mujoco.mjtJoint.mjJNT_FREE): (7, 6),
    int(mujoco.mjtJoint.mjJNT_BALL): (4, 3),
    int(mujoco.mjtJoint.mjJNT_HINGE): (1, 1),
    int(mujoco.mjtJoint.mjJNT_SLIDE): (1, 1),
}
_applied = False


def joint_addr(model: Any, name: str, velocity: bool) -> int | tuple[int, int]:
    """robosuite's joint address contract: an ``int`` for a 1-D joint, else ``(start, end)``."""
    j = model.joint_name2id(name)
    width = _WIDTHS[int(model.jnt_type[j])][1 if velocity else 0]
    start = int((model.jnt_dofadr if velocity else model.jnt_qposadr)[j])
    return start if width == 1 else (start, start + width)


def _qpos_addr(self: Any, name: str) -> int | tuple[int, int]:
    return joint_addr(self, name, velocity=False)


def _qvel_addr(self: Any, name: str) -> int | tuple[int, int]:
    return joint_addr(self, name, velocity=True)


def _controller_update(self: Any, force: bool = False) -> None:
    """robosuite's ``Controller.update`` with MuJoCo 4's ``mj_fullM(model, data, dst)``."""
    if self.new_update or force:
        if not (self.lite_physics and not force):
            self.sim.forward()
        if self.ref_name is not None:
            self.update_reference_data()
        self.joint_pos = np.array(self.sim.data.qpos[self.qpos_index])
        self.joint_vel = np.array(self.sim.data.qvel[self.qvel_index])
        nv = self.sim.model.nv
        full = np.zeros((nv, nv))
        mujoco.mj_fullM(self.sim.model._model, self.sim.data._data, full)
        self.mass_matrix = full[self.qvel_index, :][:, self.qvel_index]
        self.new_update = False


def has_qm() -> bool:
    """Whether this MuJoCo still has ``MjData.qM`` (the 3.x API robosuite 1.5.2 was written for)."""
    return hasattr(mujoco.MjData(mujoco.MjModel.from_xml_string("<mujoco/>")), "qM")


def apply() -> None:
    """Patch robosuite's bindings (always: the int comparison is right on every MuJoCo) and, where
    ``MjData.qM`` is gone, its controller base class (once; idempotent)."""
    global _applied
    if _applied:
        return
    from robosuite.controllers.parts import controller
    from robosuite.utils import binding_utils

    binding_utils.MjModel.get_joint_qpos_addr = _qpos_addr
    binding_utils.MjModel.get_joint_qvel_addr = _qvel_addr
    if not has_qm():
        controller.Controller.update = _controller_update
    _applied = True
