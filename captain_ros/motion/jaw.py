"""One jaw command, run to its end: command the gripper, then tick until the jaw reaches the
command, stops on an object (no progress for 3 ticks) or times out (``JAW_TIMEOUT_S``), under the
manipulation force guard; the Result says which, with the grip it ended with.

Used by :class:`captain_ros.motion.service.MotionService` (``move_to(jaw=...)`` and ``release``).
"""

from __future__ import annotations

import itertools

from captain_ros.backends.base import Backend
from captain_ros.core import deadline
from captain_ros.core.result import FailureCategory, Result
from captain_ros.core.types import ForceGuard
from captain_ros.motion.executor import Samples, run_ticks

JAW_TIMEOUT_S = 1.5


def jaw_command(
    backend: Backend, arm: str, value: float, dt_s: float, guard: ForceGuard
) -> tuple[Result, Samples]:
    """Move ``arm``'s jaw to ``value`` [m]; the Result and the samples of the ticks run."""
    b = backend
    before = b.gripper(arm).opening_m
    cmd = b.command_gripper(arm, value)
    t0 = b.time_s()
    still = 0

    def timed_out(_k: int, _samples: Samples) -> str | None:
        return "reached" if b.time_s() - t0 >= JAW_TIMEOUT_S else None

    def arrived(_k: int, samples: Samples) -> str | None:
        nonlocal still
        trace = samples[arm]
        if abs(trace[-1].jaw_m - cmd) < 5e-4:
            return "reached"
        still = still + 1 if abs(trace[-1].jaw_m - trace[-2].jaw_m) < 5e-5 else 0
        return "blocked" if still >= 3 else None

    out = run_ticks(
        b,
        [arm],
        dt_s,
        guard,
        itertools.repeat({}),
        before=timed_out,
        after=arrived,
        estop_stops=False,
    )
    stop, peak = out.stop_reason, out.peak_force_n
    g = b.gripper(arm)
    value_out = {
        "arm": arm,
        "stop_reason": stop,
        "jaw_command_m": round(cmd, 4),
        "jaw_before_m": round(before, 4),
        "jaw_after_m": round(g.opening_m, 4),
        "holding": g.holding,
        "grip_force_n": round(g.force_n, 2),
        "peak_force_n": round(peak, 2),
        "executed_distance_m": 0.0,
        "duration_s": round(b.time_s() - t0, 3),
    }
    receipt = (
        f"jaw {arm}: {stop} (cmd {cmd:.3f} m), jaw {before:.3f}->{g.opening_m:.3f} m, "
        f"holding={g.holding}, grip {g.force_n:.1f} N, peak {peak:.1f} N"
    )
    if stop == "force_limit":
        res = Result.fail(
            FailureCategory.FORCE_LIMIT,
            "emergency force limit tripped while moving the jaw",
            executed=True,
            value=value_out,
            receipt=receipt,
        )
    elif stop == "deadline":
        res = Result.fail(
            FailureCategory.TIMEOUT,
            f"{deadline.what()} passed while moving the jaw",
            executed=True,
            value=value_out,
            receipt=receipt,
        )
    else:
        msg = "jaw stopped on an object" if stop == "blocked" else "jaw reached its command"
        res = Result.ok(msg, value_out, executed=True, receipt=receipt)
    return res, out.samples
