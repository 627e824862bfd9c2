"""Pure guard functions of the safety layer (no state, no backend): unit-testable maths."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StepLimit:
    """One tick's limited joint command.

    Attributes:
        q_rad: Joint targets after position, velocity and acceleration limiting [rad].
        velocity_rad_s: The commanded joint velocity of this tick [rad/s].
        clipped: Names of the limits that changed the command (``position``, ``velocity``,
            ``acceleration``).
    """

    q_rad: np.ndarray
    velocity_rad_s: np.ndarray
    clipped: tuple[str, ...]


def limit_step(
    q_target: np.ndarray,
    q_ref: np.ndarray,
    v_prev: np.ndarray,
    dt_s: float,
    lower_rad: np.ndarray,
    upper_rad: np.ndarray,
    vmax_rad_s: np.ndarray,
    amax_rad_s2: float,
) -> StepLimit:
    """Limit a joint target for one tick of ``dt_s`` [s] from the reference ``q_ref`` [rad].

    Position: clip to ``[lower, upper]``. Velocity: the step is at most ``vmax * dt``. Acceleration:
    the tick's velocity differs from ``v_prev`` [rad/s] by at most ``amax * dt``.
    """
    clipped: list[str] = []
    q = np.clip(q_target, lower_rad, upper_rad)
    if not np.array_equal(q, q_target):
        clipped.append("position")
    v = (q - q_ref) / dt_s
    if np.isfinite(amax_rad_s2):
        dv = amax_rad_s2 * dt_s
        v_a = np.clip(v, v_prev - dv, v_prev + dv)
        if not np.allclose(v_a, v, rtol=0, atol=1e-12):
            clipped.append("acceleration")
        v = v_a
    v_v = np.clip(v, -vmax_rad_s, vmax_rad_s)
    if not np.allclose(v_v, v, rtol=0, atol=1e-12):
        clipped.append("velocity")
    if len(clipped) == ("position" in clipped):  # within the rate limits: pass q unchanged
        return StepLimit(q, v_v, tuple(clipped))
    q_out = np.clip(q_ref + v_v * dt_s, lower_rad, upper_rad)
    return StepLimit(q_out, (q_out - q_ref) / dt_s, tuple(clipped))


def outside_box(p: np.ndarray, lo: np.ndarray, hi: np.ndarray, margin_m: float) -> bool:
    """Whether point ``p`` [m] lies outside the box ``[lo - margin, hi + margin]``."""
    return bool(np.any(p < lo - margin_m) or np.any(p > hi + margin_m))
