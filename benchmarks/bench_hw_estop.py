"""E-stop latency on the PiPER backend against the CAN emulator (issue 16, goal <= 1 control tick).

A move streams joint targets at the 20 ms control tick on one thread; the operator's ``estop``
arrives from another thread at a random moment. Measured per trial:
- command -> zero commanded velocity: the wall time from the ``estop`` call until the arm
  controller's commanded velocity is zero (the emulated controller's planner output, read at its
  5 ms cycle) and no further joint target is accepted;
- command -> arm at rest: until the measured joint speeds fall below 0.01 rad/s.
Side by side, the physical floor of this setup: one emulator cycle (5 ms) and one control tick.

    .venv/bin/python benchmarks/bench_hw_estop.py --trials 20
"""

from __future__ import annotations

import argparse
import os
import platform
import threading
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ns = ap.parse_args()
    from captain_ros.backends import make_backend
    from captain_ros.core.errors import EStopError
    from captain_ros.core.types import ForceGuard

    b = make_backend("piper", emulate=True, can="bench-estop", image_size_px=64)
    dev = b.emulator.devices["arm"]
    zero_ms, rest_ms = [], []
    rng = np.random.default_rng(0)
    for _ in range(ns.trials):
        q0 = b.joint_state("arm").position_rad.copy()
        sign = 1.0 if q0[0] < 0 else -1.0
        stop = threading.Event()

        def stream(stop: threading.Event = stop, q0: np.ndarray = q0, sign: float = sign) -> None:
            k = 0
            while not stop.is_set():
                k += 1
                try:
                    b.servo(
                        {"arm": q0 + sign * np.array([min(0.02 * k, 1.0), 0, 0, 0, 0, 0])},
                        0.02,
                        ForceGuard(),
                    )
                except EStopError:
                    return

        th = threading.Thread(target=stream)
        th.start()
        time.sleep(0.3 + rng.uniform(0, 0.02))
        t0 = time.perf_counter()
        b.estop("benchmark")
        while np.any(dev.velocity_rad_s != 0) or dev.target_rad is not None:
            time.sleep(0.0002)
        zero_ms.append((time.perf_counter() - t0) * 1e3)
        while np.max(np.abs(b.joint_state("arm").velocity_rad_s)) > 0.01:
            time.sleep(0.001)
        rest_ms.append((time.perf_counter() - t0) * 1e3)
        stop.set()
        th.join()
        b.reset_estop()
    b.close()
    z, r = np.array(zero_ms), np.array(rest_ms)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"trials {ns.trials}; e-stop -> zero commanded velocity: median {np.median(z):.1f} ms, "
        f"p95 {np.percentile(z, 95):.1f} ms, max {z.max():.1f} ms"
    )
    print(
        f"e-stop -> arm at rest (|qd| < 0.01 rad/s): median {np.median(r):.1f} ms, "
        f"p95 {np.percentile(r, 95):.1f} ms, max {r.max():.1f} ms"
    )
    print(f"physical floor: emulator cycle {emu_cycle_ms():.1f} ms; control tick 20.0 ms")


def emu_cycle_ms() -> float:
    from captain_ros.backends.piper_emulator.emulator import CYCLE_S

    return CYCLE_S * 1e3


if __name__ == "__main__":
    main()
