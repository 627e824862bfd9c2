"""Per-arm logs of executed motions (for ``read_motion_trajectory`` and ``recover``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from captain_ros.core.geometry import Pose


@dataclass(frozen=True)
class MotionSample:
    """One control tick of an executed motion: time [s], tool pose, jaw opening [m], force [N]."""

    t_s: float
    pose: Pose
    jaw_m: float
    force_n: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "t_s": round(self.t_s, 4),
            "position_m": [round(float(v), 5) for v in self.pose.position_m],
            "jaw_m": round(self.jaw_m, 5),
            "force_n": round(self.force_n, 3),
        }


@dataclass(frozen=True)
class Outcome:
    """What one executed motion did (per arm samples, stop reason, peak force [N])."""

    samples: dict[str, list[MotionSample]]
    stop_reason: str  # reached | contact | force_limit | estop | deadline | a stop rule's
    peak_force_n: float
    elapsed_s: float
    detail: str = ""  # estop: the latch's reason (who latched it and why)

    def distance_m(self, arm: str) -> float:
        """Straight-line displacement of the tool from start to end [m]."""
        s = self.samples[arm]
        return float(np.linalg.norm(s[-1].pose.position_m - s[0].pose.position_m))


TRACE_MAX_SAMPLES = 40
"""At most this many samples per arm go into a motion Result's ``diagnostics["trace"]``."""


def trace(samples: list[MotionSample], max_samples: int = TRACE_MAX_SAMPLES) -> dict[str, Any]:
    """A compact, evenly thinned copy of one arm's samples for the episode log (``report.html``
    plots it): ``{"t_s": [...], "position_m": [[x, y, z], ...], "jaw_m": [...], "force_n": [...]}``.
    The first, the last and the peak-force samples are always kept."""
    n = len(samples)
    if n == 0:
        return {"t_s": [], "position_m": [], "jaw_m": [], "force_n": []}
    keep = set(np.linspace(0, n - 1, min(n, max(max_samples - 1, 2))).round().astype(int).tolist())
    keep.add(int(np.argmax([s.force_n for s in samples])))
    picked = [samples[i].to_dict() for i in sorted(keep)]
    return {
        "t_s": [p["t_s"] for p in picked],
        "position_m": [p["position_m"] for p in picked],
        "jaw_m": [p["jaw_m"] for p in picked],
        "force_n": [p["force_n"] for p in picked],
    }
