"""One control tick's physics under the contact-force guard.

:func:`guarded_substeps` runs the tick's physics substeps and reads the contact force of every arm
after *each* substep: above ``guard.emergency_force_n`` on any arm the tick stops as an emergency,
above ``guard.baseline_n + guard.stop_force_n`` on a watched (commanded) arm it stops as a guarded
stop. The caller holds the arms where they are then
(:meth:`~captain_ros.backends.mujoco.backend.MujocoBackend.servo`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mujoco

from captain_ros.backends.mujoco.contacts import ContactReader
from captain_ros.core.types import ForceGuard


@dataclass(frozen=True)
class Substeps:
    """What one guarded tick did.

    Attributes:
        substeps: Physics substeps run (the last one is the one that stopped it, if any).
        peak_force_n: Largest contact force on any arm over the tick [N].
        stopped: The guard (or the emergency limit) stopped the tick.
        emergency: The emergency limit stopped it (every arm is to hold).
        last_forces_n: Contact force per arm after the last substep [N]; ``None``: no contact.
    """

    substeps: int
    peak_force_n: float
    stopped: bool
    emergency: bool
    last_forces_n: list[float] | None


def guarded_substeps(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    contacts: ContactReader,
    n_sub: int,
    watched: Sequence[int],
    guard: ForceGuard,
) -> Substeps:
    """Step ``n_sub`` substeps (at least one), stopping at the first one over the guard; ``watched``:
    the indices (in the rig's arm order) of the arms the guarded stop looks at."""
    peak = 0.0
    stopped = emergency = False
    k = 0
    stop_at = guard.baseline_n + guard.stop_force_n
    forces_of = (
        contacts.arm_force_list
        if contacts.sensed
        else (lambda dd: contacts.arm_forces_n(dd).tolist())
    )
    emergency_n = guard.emergency_force_n
    last: list[float] | None = None
    step = mujoco.mj_step
    for k in range(1, max(1, n_sub) + 1):  # noqa: B007 - k is reported
        step(model, data)
        if data.ncon == 0:
            last = None
            continue
        last = forces_of(data)
        if last is None:
            continue
        top = max(last)
        if top > peak:
            peak = top
        if top > emergency_n:
            stopped = emergency = True
            break
        if max(last[i] for i in watched) > stop_at:
            stopped = True
            break
    return Substeps(k, peak, stopped, emergency, last)
