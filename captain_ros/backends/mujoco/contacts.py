"""Contact readings of the arms: external force per arm, pad contacts, holding detection.

The force of an arm is the magnitude of the *net* external contact force on all its bodies
(links, gripper, fingers, pads) [N], from ``mj_contactForce``: what a wrist force/torque sensor
plus joint-torque residuals would report. Contacts inside one arm (self-contacts) are internal and
excluded; so the squeeze of a grasp cancels out and a held object weighs in with its load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from captain_ros.backends.mujoco.model import ArmIndex


@dataclass(frozen=True)
class PadContacts:
    """Bodies touching each pad of one arm and the summed pad normal force [N]."""

    left: frozenset[int]
    right: frozenset[int]
    normal_force_n: float

    @property
    def held_body(self) -> int | None:
        """A body touched by both pads (the grasped body), or None."""
        both = self.left & self.right
        return min(both) if both else None


class ContactReader:
    """Vectorised contact bookkeeping over a fixed model."""

    def __init__(self, model: mujoco.MjModel, arms: list[ArmIndex]) -> None:
        self._model = model
        self._arms = arms
        self.body_arm = np.full(model.nbody, -1, dtype=np.int64)
        for k, a in enumerate(arms):
            for b in a.body_ids:
                self.body_arm[b] = k
        self._geom_arm = self.body_arm[model.geom_bodyid]
        self._pad_owner = np.full(model.ngeom, -1, dtype=np.int64)
        self._pad_side = np.zeros(model.ngeom, dtype=np.int64)
        for k, a in enumerate(arms):
            for side, g in enumerate(a.pad_geom_ids):
                self._pad_owner[g] = k
                self._pad_side[g] = side
        self._buf = np.zeros(6)
        try:
            self._sensor_adr: list[int] | None = [
                int(model.sensor_adr[model.sensor(f"{a.prefix}arm_force").id]) for a in arms
            ]
        except KeyError:
            self._sensor_adr = None
        try:
            self._pad_sensor_adr: list[int] | None = [
                int(model.sensor_adr[model.sensor(f"{a.prefix}pad_{side}_touch").id])
                for a in arms
                for side in ("left", "right")
            ]
        except KeyError:
            self._pad_sensor_adr = None
        self._select = np.zeros((len(arms), model.nbody))
        for k, a in enumerate(arms):
            self._select[k, sorted(a.body_ids)] = 1.0
        self._is_pad = self._pad_owner >= 0

    def _world_force(self, data: mujoco.MjData, i: int) -> np.ndarray:
        """World-frame contact force of contact ``i`` acting on its geom2 [N]."""
        mujoco.mj_contactForce(self._model, data, i, self._buf)
        frame = data.contact.frame[i].reshape(3, 3)
        return frame.T @ self._buf[:3]

    def arm_forces_n(self, data: mujoco.MjData) -> np.ndarray:
        """(n_arms,) magnitude of the net external contact force on each arm [N].

        Reads the rig's per-arm ``<contact subtree1=... reduce="netforce">`` sensors (computed by
        ``mj_step`` itself); without them, sums ``cfrc_ext`` over the arm's bodies (contacts inside
        the arm cancel, leaving the external load).
        """
        if data.ncon == 0:
            return np.zeros(len(self._arms))
        if self._sensor_adr is not None:  # <contact data="found force" reduce="netforce"> per arm
            sd = data.sensordata
            out = np.zeros(len(self._sensor_adr))
            for k, a in enumerate(self._sensor_adr):
                if sd[a] > 0:  # number of contacts on the arm
                    fx, fy, fz = sd[a + 1 : a + 4].tolist()
                    out[k] = math.sqrt(fx * fx + fy * fy + fz * fz)
            return out
        mujoco.mj_rnePostConstraint(self._model, data)
        net = self._select @ data.cfrc_ext[:, 3:]
        return np.sqrt(np.einsum("ij,ij->i", net, net))

    @property
    def sensed(self) -> bool:
        """Whether the rig carries the per-arm contact sensors (:meth:`arm_force_list` reads them)."""
        return self._sensor_adr is not None

    def arm_force_list(self, data: mujoco.MjData) -> list[float] | None:
        """Hot path of the per-substep guard: forces [N] per arm, or None when no arm touches
        anything (needs the rig's contact sensors)."""
        sd = data.sensordata
        found = [sd[a] > 0 for a in self._sensor_adr]  # type: ignore[union-attr]
        if not any(found):
            return None
        return self.arm_forces_n(data).tolist()

    def arm_forces_by_contacts_n(self, data: mujoco.MjData) -> np.ndarray:
        """Reference implementation of :meth:`arm_forces_n` from ``mj_contactForce`` (slower)."""
        n = len(self._arms)
        out = np.zeros(n)
        ncon = data.ncon
        if ncon == 0:
            return out
        geoms = data.contact.geom[:ncon]
        a1 = self._geom_arm[geoms[:, 0]]
        a2 = self._geom_arm[geoms[:, 1]]
        rel = np.nonzero((a1 != a2) & ((a1 >= 0) | (a2 >= 0)))[0]
        if rel.size == 0:
            return out
        net = np.zeros((n, 3))
        for i in rel:
            f = self._world_force(data, int(i))
            if a2[i] >= 0:
                net[a2[i]] += f
            if a1[i] >= 0:
                net[a1[i]] -= f
        return np.linalg.norm(net, axis=1)

    def pads(self, data: mujoco.MjData) -> list[PadContacts]:
        """Per arm: bodies in contact with the left/right pad and the summed normal force."""
        n = len(self._arms)
        left: list[set[int]] = [set() for _ in range(n)]
        right: list[set[int]] = [set() for _ in range(n)]
        force = np.zeros(n)
        ncon = data.ncon
        touched = ncon > 0 and (
            self._pad_sensor_adr is None
            or any(data.sensordata[a] > 0 for a in self._pad_sensor_adr)
        )
        geoms = data.contact.geom[:ncon] if touched else None
        if geoms is not None and self._is_pad[geoms].any():
            for i in np.nonzero(
                (self._pad_owner[geoms[:, 0]] >= 0) | (self._pad_owner[geoms[:, 1]] >= 0)
            )[0]:
                for mine, other in ((geoms[i, 0], geoms[i, 1]), (geoms[i, 1], geoms[i, 0])):
                    k = self._pad_owner[mine]
                    if k < 0:
                        continue
                    ob = int(self._model.geom_bodyid[other])
                    if self.body_arm[ob] == k:
                        continue
                    (left if self._pad_side[mine] == 0 else right)[k].add(ob)
                    mujoco.mj_contactForce(self._model, data, int(i), self._buf)
                    force[k] += abs(self._buf[0])
        return [
            PadContacts(frozenset(left[k]), frozenset(right[k]), float(force[k])) for k in range(n)
        ]

    def touching(self, data: mujoco.MjData) -> list[tuple[int, int]]:
        """All body pairs in contact (body1, body2)."""
        ncon = data.ncon
        if ncon == 0:
            return []
        b = self._model.geom_bodyid[data.contact.geom[:ncon]]
        return [(int(x), int(y)) for x, y in b]
