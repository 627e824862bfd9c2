"""Where the table and the arms are: the geometry task layouts are sampled in.

These numbers must agree with the rigs of :mod:`captain_ros.backends.mujoco` (table top height,
arm base poses); ``tests/test_tasks_mujoco.py`` checks them against the compiled model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from captain_ros.core.errors import UnknownNameError


@dataclass(frozen=True)
class Workspace:
    """Table and arm placement of one rig.

    Attributes:
        rig: ``"piper"`` or ``"piper_dual"``.
        table_top_z_m: Height of the table surface in the world frame [m].
        arm_bases: ``{arm: (x, y, heading_rad)}`` base position [m] and forward heading [rad].
        reach_min_m / reach_max_m: Horizontal distance band from an arm base in which top-down
            grasps on the table are comfortably reachable [m]. Measured with the motion layer's
            IK on the PiPER model: a vertical tool reaches the table from 0.12 to 0.48 m, but
            lifting 10 cm above the table only up to about 0.40 m (tool height at most 0.14 m at
            0.2-0.3 m, 0.10 m at 0.40 m, 0.06 m at 0.45 m; joint 5 is limited to +-75 deg).
        bearing_rad: Half-angle of the reachable sector around an arm's heading [rad].
    """

    rig: str
    table_top_z_m: float
    arm_bases: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    reach_min_m: float = 0.22
    reach_max_m: float = 0.40
    bearing_rad: float = float(np.deg2rad(55.0))

    def arm_base_xy_heading(self, arm: str | None = None) -> tuple[np.ndarray, float]:
        """Base (x, y) [m] and heading [rad] of ``arm`` (the first arm when ``None``)."""
        name = arm if arm is not None else next(iter(self.arm_bases))
        if name not in self.arm_bases:
            raise UnknownNameError("arm", name, list(self.arm_bases))
        x, y, h = self.arm_bases[name]
        return np.array([x, y]), float(h)


#: Single PiPER: base at the world origin on the table top, facing +x.
PIPER = Workspace(rig="piper", table_top_z_m=0.0, arm_bases={"arm": (0.0, 0.0, 0.0)})

#: Dual PiPER: two bases side by side facing +x (left at +y, right at -y).
PIPER_DUAL = Workspace(
    rig="piper_dual",
    table_top_z_m=0.0,
    arm_bases={"left": (0.0, 0.25, 0.0), "right": (0.0, -0.25, 0.0)},
)


def workspace(rig: str) -> Workspace:
    """The :class:`Workspace` of ``rig``."""
    table = {"piper": PIPER, "piper_dual": PIPER_DUAL}
    if rig not in table:
        raise UnknownNameError("rig", rig, list(table))
    return table[rig]
