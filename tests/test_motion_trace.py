"""The thinned motion trace that executed sweeps log in ``diagnostics["trace"]`` (report plots)."""

import numpy as np

from captain_ros.core.geometry import Pose
from captain_ros.motion.trajectory import TRACE_MAX_SAMPLES, MotionSample, trace


def _samples(n: int, peak_at: int) -> list[MotionSample]:
    return [
        MotionSample(
            0.02 * i,
            Pose(np.array([0.3, 0.0, 0.2 - 0.001 * i]), np.array([0.0, 1.0, 0.0, 0.0])),
            0.05,
            9.0 if i == peak_at else 0.1 * (i % 3),
        )
        for i in range(n)
    ]


def test_trace_keeps_first_last_and_peak_and_is_bounded():
    s = _samples(333, peak_at=101)
    tr = trace(s)
    assert len(tr["t_s"]) <= TRACE_MAX_SAMPLES and len(tr["t_s"]) == len(tr["position_m"]) == len(
        tr["force_n"]
    )
    assert tr["t_s"][0] == 0.0 and tr["t_s"][-1] == s[-1].to_dict()["t_s"]
    assert max(tr["force_n"]) == 9.0 and np.all(np.diff(tr["t_s"]) > 0)
    assert tr["position_m"][-1] == s[-1].to_dict()["position_m"]


def test_short_and_empty_traces():
    assert len(trace(_samples(5, 2))["t_s"]) == 5
    assert trace([]) == {"t_s": [], "position_m": [], "jaw_m": [], "force_n": []}
