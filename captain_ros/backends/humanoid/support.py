"""The payload-support adapter: arm posture targets regulated by torque-limited PD.

The paper's adapter regulates the 14 arm joints of each robot (waist excluded) with PD gains
kp 24 N m/rad and kd 1.5 N m s/rad, ramps to the support posture over 6 s and tilts the palms by
60 degrees. It is *posture regulation*: the payload rests on the palms and forearms, held by
contact and friction only; it is not a rigid grasp and nothing constrains the payload's centre of
mass. Here the PD runs in the MuJoCo position servos (``mjcf.py``); this module holds the
postures and the target ramp.

Postures (per arm, joint order of :data:`~captain_ros.backends.humanoid.mjcf.ARM_JOINTS`):

* ``support``: upper arm 20 degrees forward, forearm horizontal towards the partner, palm rotated
  60 degrees from hanging (its surface 30 degrees below horizontal, descending towards the partner,
  so the two robots' palms form a V cradle under the payload's ends). The shoulder and elbow
  targets include the static sag of the nominal 2 kg payload under kp 24, so the loaded palms sit
  at the nominal support height.
* ``pre_support``: the same with the upper arm 0.08 rad further back (palms about 3 cm lower): the
  posture the robots start in, palms just under the payload.
* ``release``: upper arm back and elbow opened: palms drop and retract from under the payload.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from captain_ros.backends.humanoid.mjcf import ARM_JOINTS

SUPPORT_RAMP_S = 6.0
PALM_TILT_RAD = float(np.radians(60.0))
_ARM_POSTURES: dict[str, dict[str, float]] = {
    "support": {"shoulder_pitch": -0.35 - 0.07, "elbow": -1.22 - 0.05, "wrist_pitch": 0.0},
    "pre_support": {"shoulder_pitch": -0.35 + 0.08, "elbow": -1.22, "wrist_pitch": 0.0},
    "release": {"shoulder_pitch": -0.05, "elbow": -0.9, "wrist_pitch": 0.0},
}
POSTURES = tuple(_ARM_POSTURES)


def posture(name: str) -> np.ndarray:
    """The 14 arm targets [rad] of posture ``name`` (left arm, then right arm)."""
    from captain_ros.core.errors import UnknownNameError

    if name not in _ARM_POSTURES:
        raise UnknownNameError("posture", name, POSTURES)
    values = dict(_ARM_POSTURES[name])
    # the palm angle from hanging is shoulder + elbow + wrist pitch = -60 degrees
    values["wrist_pitch"] = -PALM_TILT_RAD - values["shoulder_pitch"] - values["elbow"]
    if name == "release":
        values["wrist_pitch"] = 0.3
    arm = np.array([values.get(j, 0.0) for j in ARM_JOINTS])
    return np.concatenate([arm, arm])


@dataclass(frozen=True)
class ArmRamp:
    """A linear ramp of the PD targets from ``start`` to ``goal`` over ``[t0_s, t0_s + ramp_s]``."""

    start: np.ndarray
    goal: np.ndarray
    t0_s: float
    ramp_s: float

    def at(self, t_s: float) -> np.ndarray:
        if self.ramp_s <= 0.0:
            return self.goal
        a = min(max((t_s - self.t0_s) / self.ramp_s, 0.0), 1.0)
        return self.start + (self.goal - self.start) * a

    def done(self, t_s: float) -> bool:
        return t_s >= self.t0_s + self.ramp_s
