"""The one tick loop that executes motions: sweeps and jaw commands both run through it.

Each control tick sends joint targets (or none: the arms keep their targets while the jaw moves)
through ``backend.servo``, which checks the force at every physics substep, then samples the tool
pose, jaw opening and contact force of the moving arms. The loop ends at the first contact over
the guard (``contact``), the emergency limit (``force_limit``), a latched e-stop (``estop``), when
a caller's stop rule says so, when the call's deadline (:mod:`captain_ros.core.deadline`) has
passed (``deadline``: the arms keep their last targets), or when the targets run out (``reached``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core import deadline
from captain_ros.core.errors import EStopError
from captain_ros.core.types import ForceGuard
from captain_ros.motion.trajectory import MotionSample, Outcome

Samples = dict[str, list[MotionSample]]
StopRule = Callable[[int, Samples], str | None]
"""``rule(k, samples) -> stop reason | None`` at tick ``k`` (0-based)."""


def sample(backend: Backend, arm: str, t0: float) -> MotionSample:
    """Tool pose, jaw opening [m] and contact force [N] of ``arm`` at ``backend.time_s() - t0``."""
    return MotionSample(
        backend.time_s() - t0,
        backend.ee_pose(arm),
        backend.gripper(arm).opening_m,
        backend.contact_force_n(arm),
    )


def run_ticks(
    backend: Backend,
    arms: Sequence[str],
    dt_s: float,
    guard: ForceGuard,
    targets: Iterable[Mapping[str, np.ndarray]],
    *,
    before: StopRule | None = None,
    after: StopRule | None = None,
    estop_stops: bool = True,
) -> Outcome:
    """Execute ``targets`` (one joint-target dict per tick) on ``backend``.

    Args:
        arms: Arms whose samples are recorded.
        dt_s: Control tick [s].
        guard: Force guard of every tick.
        targets: Per-tick joint targets; ``{}`` keeps the current targets.
        before: Checked before each tick; a reason ends the loop without that tick.
        after: Checked after each tick's samples are taken.
        estop_stops: A latched e-stop ends the loop with ``estop`` (else it is re-raised).
    """
    t0 = backend.time_s()
    samples: Samples = {a: [sample(backend, a, t0)] for a in arms}
    peak, stop, detail = 0.0, "reached", ""
    for k, q in enumerate(targets):
        if before is not None and (why := before(k, samples)) is not None:
            stop = why
            break
        if deadline.expired():
            stop = "deadline"
            break
        try:
            rep = backend.servo(q, dt_s, guard)
        except EStopError as exc:  # latched while moving (operator, guard, hardware): halted
            if not estop_stops:
                raise
            stop, detail = "estop", str(exc)
            break
        peak = max(peak, rep.peak_force_n)
        for a in arms:
            samples[a].append(sample(backend, a, t0))
        if rep.stopped:
            stop = "force_limit" if rep.emergency else "contact"
            break
        if after is not None and (why := after(k, samples)) is not None:
            stop = why
            break
    return Outcome(samples, stop, peak, backend.time_s() - t0, detail)
