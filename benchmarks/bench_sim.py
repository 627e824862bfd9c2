"""Simulation throughput of the MuJoCo PiPER backend, in one run.

Prints: guarded-move control ticks per wall second and the multiple of real time, against raw
``mj_step`` throughput of the same scene (target >= 25x real time on one core); observation
latency of head + wrist RGB-D at 512x512 (target <= 120 ms); snapshot + restore time (target
<= 100 us). Usage: ``python benchmarks/bench_sim.py [--moves 12] [--frames 15] [--repeats 3]``.
Throughputs are the best of ``--repeats`` interleaved runs, per wall second and per CPU second of
the (single-threaded) process, so a shared machine distorts them less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from captain_ros.backends.mujoco import MujocoBackend  # noqa: E402
from captain_ros.core.scene import SceneSpec  # noqa: E402
from captain_ros.motion import MotionService  # noqa: E402

DOWN = [0.0, 0.0, 1.0, 0.0]
CUBES = "".join(
    f'<body name="cube{i}" pos="{0.30 + 0.06 * i} {0.12 - 0.12 * i} 0.02"><freejoint name="cube{i}"/>'
    f'<geom type="box" size="0.02 0.02 0.02" rgba="0.8 0.{2 + 3 * i} 0.2 1" mass="0.05"/></body>'
    for i in range(3)
)
SCENE = SceneSpec(
    rig="piper", worldbody_xml=CUBES, object_bodies=("cube0", "cube1", "cube2"), seed=0
)


def bench_guarded_moves(moves: int) -> tuple[float, float, float]:
    """Control ticks per wall second, multiple of real time per wall second and per CPU second."""
    b = MujocoBackend(SCENE)
    m = MotionService(b)
    targets = [[0.30, 0.10, 0.08], [0.40, -0.10, 0.06], [0.28, -0.05, 0.10], [0.36, 0.12, 0.05]]
    ticks = 0
    sim0 = b.time_s()
    t0 = time.perf_counter()
    c0 = time.process_time()
    for k in range(moves):
        r = m.move_to(targets[k % len(targets)], DOWN, speed_m_s=0.1)
        assert r.success, r.message
        ticks += int(round(r.value["duration_s"] / m.dt_s))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return ticks / wall, (b.time_s() - sim0) / wall, (b.time_s() - sim0) / cpu


def bench_raw_step(seconds: float = 2.0) -> tuple[float, float]:
    """Raw mj_step substeps per wall second and per CPU second of the same model."""
    b = MujocoBackend(SCENE)
    m, d = b.model, b.data
    n = int(seconds / m.opt.timestep)
    t0 = time.perf_counter()
    c0 = time.process_time()
    for _ in range(n):
        mujoco.mj_step(m, d)
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def bench_observation(frames: int) -> list[float]:
    b = MujocoBackend(SCENE)
    b.capture(["head", "wrist"])  # warm up the GL context
    out = []
    for _ in range(frames):
        t0 = time.perf_counter()
        b.capture(["head", "wrist"])
        out.append(time.perf_counter() - t0)
    b.close()
    return out


def bench_snapshot(n: int = 2000) -> tuple[float, float]:
    b = MujocoBackend(SCENE)
    b.step(50)
    snap = b.snapshot()
    t0 = time.perf_counter()
    for _ in range(n):
        snap = b.snapshot()
    t_snap = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        b.restore(snap)
    return t_snap, (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--moves", type=int, default=12)
    ap.add_argument("--frames", type=int, default=15)
    ap.add_argument("--repeats", type=int, default=3, help="best of N (the machine may be shared)")
    a = ap.parse_args()
    runs = [(bench_guarded_moves(a.moves), bench_raw_step()) for _ in range(a.repeats)]
    tps, rt, rt_cpu = (max(r[0][i] for r in runs) for i in range(3))
    steps, steps_cpu = (max(r[1][i] for r in runs) for i in range(2))
    dt = 0.002
    print(
        f"guarded move_to (incl. planning): {tps:,.0f} control ticks (20 ms) per wall s = {rt:.1f}x "
        f"real time; {rt_cpu:.1f}x per CPU-second of one core (target >= 25x)"
    )
    print(
        f"raw mj_step, same scene: {steps:,.0f} steps per wall s = {steps * dt:.1f}x real time; "
        f"{steps_cpu * dt:.1f}x per CPU-second; guarded-control overhead "
        f"{100 * (1 - rt_cpu / (steps_cpu * dt)):.0f}% of CPU time"
    )
    lat = bench_observation(a.frames)
    print(
        f"observation head + wrist RGB-D 512x512: median {1000 * statistics.median(lat):.1f} ms, "
        f"p90 {1000 * float(np.percentile(lat, 90)):.1f} ms (target <= 120 ms)"
    )
    ts, tr = bench_snapshot()
    print(
        f"snapshot {1e6 * ts:.1f} us + restore {1e6 * tr:.1f} us = {1e6 * (ts + tr):.1f} us (target <= 100 us)"
    )


if __name__ == "__main__":
    main()
