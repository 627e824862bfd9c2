"""The ROS arm bridge's feedback path: /joint_states as the bridge receives it from the driver.

Starts the MuJoCo-backed arm driver node in this process (its own context and a 6-thread
executor, as the tests do) and the bridge's transport (``RclpyArmTransport``), then for
``--seconds`` counts the joint states the bridge receives, the largest gap between two, and the
process CPU per wall second. The physical limit in the same run: what the driver published (its
100 Hz timer). ``--executor multi`` swaps the bridge's single-threaded executor for rclpy's
``MultiThreadedExecutor(4)`` (what the bridge used before), to show the difference measured on the
same machine.

Usage: ``.venv/bin/python benchmarks/bench_arm_bridge.py [--seconds 5] [--executor single|multi]
[--domain 101] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "ros"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--executor", choices=("single", "multi"), default="single")
    ap.add_argument("--domain", type=int, default=101)
    ap.add_argument("--json", default=None)
    ns = ap.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    from arm_bridge_helpers import InProcessDriver, arm_config
    from rclpy.executors import MultiThreadedExecutor

    from captain_ros.ros.arm_bridge import transport as tr

    if ns.executor == "multi":  # the bridge as it was: rclpy's multi-threaded executor
        tr.SingleThreadedExecutor = lambda context: MultiThreadedExecutor(  # type: ignore[misc]
            num_threads=4, context=context
        )
    tmp = Path(tempfile.mkdtemp(prefix="bench_arm_bridge-"))
    driver = InProcessDriver(ns.domain, tmp / "calib", camera_rate_hz=0.0)
    published: list[float] = []
    publish = driver.node.js_pub.publish
    driver.node.js_pub.publish = lambda m: (published.append(time.monotonic()), publish(m))[1]
    bridge = tr.RclpyArmTransport(arm_config(tmp / "calib", ns.domain))
    try:
        first = bridge.wait_joint_sample(-1.0, 10.0)
        if first is None:
            print("error: no joint state reached the bridge within 10 s", file=sys.stderr)
            return 2
        received, last = [first.received_s], first.received_s
        c0, w0 = os.times(), time.monotonic()
        n_pub0 = len(published)
        end = w0 + ns.seconds
        while time.monotonic() < end:
            s = bridge.wait_joint_sample(last, max(0.0, end - time.monotonic()))
            if s is not None:
                received.append(s.received_s)
                last = s.received_s
        c1, wall = os.times(), time.monotonic() - w0
    finally:
        bridge.close()
        driver.close()
    gaps = np.diff(received)
    out = {
        "executor": ns.executor,
        "seconds": round(wall, 2),
        "published_per_s": round((len(published) - n_pub0) / wall, 1),
        "received_per_s": round((len(received) - 1) / wall, 1),
        "max_gap_ms": round(1e3 * float(gaps.max()), 1) if len(gaps) else None,
        "p99_gap_ms": round(1e3 * float(np.percentile(gaps, 99)), 1) if len(gaps) else None,
        "process_cpu_per_wall_s": round((c1.user + c1.system - c0.user - c0.system) / wall, 2),
        "load_average": [round(v, 2) for v in os.getloadavg()],
    }
    print(json.dumps(out))
    if ns.json:
        Path(ns.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
