"""Per-request harness overhead with the fake backend and the replay policy.

Overhead = request wall time minus model time minus backend time (time inside robot calls):
context rendering, policy-reply parsing, the pipe to the sandboxed session and back for every
robot call, running the cell, receipts, image saving and the trajectory log. Target: median and
p95 at most 20 ms per request.

Run: ``.venv/bin/python benchmarks/bench_harness.py [--requests 60] [--calls 4]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from captain_ros.api.service import RobotService
from captain_ros.backends.fake import FakeBackend
from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.harness import Budgets, run_episode
from captain_ros.harness.episode.context import render
from captain_ros.harness.record.trajectory import load_history
from captain_ros.motion.service import MotionService
from captain_ros.perception.service import PerceptionService
from captain_ros.policy.replay import ReplayPolicy


class BenchTask:
    name = "bench"
    tolerances: dict[str, float] = {}

    def instruction(self, seed: int) -> str:
        return "Benchmark: query the robot state repeatedly."

    def gate_check(self, measurements):  # noqa: ANN001
        return True, "ok"

    def success(self, state) -> bool:  # noqa: ANN001
        return False


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--requests", type=int, default=60, help="requests per episode (the paper's budget: 60)"
    )
    ap.add_argument("--calls", type=int, default=4, help="robot calls per request")
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()

    cell = "\n".join(
        [
            "s = robot.get_robot_state()",
            "g = robot.gripper_state()",
            "h = robot.hold(0.01)",
            "t = robot.read_motion_trajectory(last_n=5)",
        ][: args.calls]
        or ["pass"]
    )
    cell += "\nprint(s.success, round(s.value['tcp_position_m'][2], 3) if s.success else s.message)"
    overhead_ms, wall_ms, backend_ms, render_ms = [], [], [], []
    for ep in range(args.episodes):
        backend = FakeBackend(image_size=(96, 128))
        robot = RobotService(backend, MotionService(backend), PerceptionService(backend))
        with tempfile.TemporaryDirectory() as d:
            summary = run_episode(
                BenchTask(),
                ep,
                robot,
                ReplayPolicy([{"code": cell}] * args.requests),
                Budgets(max_requests=args.requests + 1),
                Path(d) / "ep",
            )
            recs = list(EpisodeFiles(Path(d) / "ep").read_trajectory_split().requests)
            history = load_history(EpisodeFiles(Path(d) / "ep").trajectory)
            for r in recs:
                if r["calls"]:
                    overhead_ms.append(1000 * r["harness_s"])
                    backend_ms.append(1000 * r["backend_s"])
                    wall_ms.append(1000 * (r["harness_s"] + r["backend_s"] + r["model_s"]))
                    t0 = time.perf_counter()
                    render(history.upto(r["t"]))
                    render_ms.append(1000 * (time.perf_counter() - t0))
            assert summary.requests == args.requests + 1, summary
    figures = {
        "requests_measured": len(overhead_ms),
        "robot_calls_per_request": args.calls,
        "harness_overhead_ms_median": round(statistics.median(overhead_ms), 2),
        "harness_overhead_ms_p95": round(percentile(overhead_ms, 0.95), 2),
        "harness_overhead_ms_max": round(max(overhead_ms), 2),
        "context_render_ms_median": round(statistics.median(render_ms), 2),
        "context_render_ms_p95": round(percentile(render_ms, 0.95), 2),
        "backend_ms_median": round(statistics.median(backend_ms), 2),
        "request_wall_ms_median": round(statistics.median(wall_ms), 2),
        "target_ms": 20.0,
    }
    figures["meets_target"] = figures["harness_overhead_ms_p95"] <= 20.0
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
