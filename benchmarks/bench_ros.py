"""ROS layer benchmark: service round-trip latency and episode wall time through ROS vs in-process.

    .venv/bin/python benchmarks/bench_ros.py [--calls 1000] [--episodes 1] [--task pick_place]

1. ``RobotCall`` round trip between two processes (a trivial server: pure transport + JSON), and
   the same for a real capability (``robot_geometry`` on the perception node of a robot stack).
   Target: p50 <= 2 ms.
2. The same scripted MuJoCo episode (task, seed) run in-process (``RobotService`` handed to
   ``run_episode``) and through the ROS graph of ``captain up`` (robot + perception + policy +
   recorder nodes, RunEpisode action, every robot call a ROS service call). Target: ROS wall time
   <= 1.10x in-process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ECHO_SERVER = """
import rclpy
from rclpy.node import Node
from captain_ros_interfaces.srv import RobotCall
from captain_ros.core import Result
from captain_ros.ros import convert
rclpy.init()
node = Node("echo_server")
ok = Result.ok("ok", {"echo": True}, receipt="echo")
node.create_service(RobotCall, "/bench/call", lambda req, resp: convert.fill_call_response(resp, ok))
try:
    rclpy.spin(node)
except BaseException:
    pass
"""


def _cpu_s() -> float:
    """CPU time [s] of this process and its finished children (the sandbox sessions)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _percentiles(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(1e3 * s for s in samples_s)
    return {
        "p50_ms": round(statistics.median(ms), 3),
        "p90_ms": round(ms[int(0.9 * len(ms))], 3),
        "p99_ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 3),
        "n": len(ms),
    }


def _round_trips(ctx: object, service: str, capability: str, n: int) -> dict[str, float]:
    from captain_ros_interfaces.srv import RobotCall
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    from captain_ros.ros import convert

    node = Node("bench_client", context=ctx)
    client = node.create_client(RobotCall, service)
    if not client.wait_for_service(timeout_sec=60.0):
        raise RuntimeError(f"{service} did not come up")
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    req = convert.make_call_request(capability, {})
    samples = []
    for i in range(n + 20):
        t0 = time.perf_counter()
        fut = client.call_async(req)
        executor.spin_until_future_complete(fut, timeout_sec=10.0)
        dt = time.perf_counter() - t0
        assert fut.done() and fut.result().success, fut.result()
        if i >= 20:  # warm-up
            samples.append(dt)
    node.destroy_node()
    return _percentiles(samples)


def bench_latency(n: int, domain: int) -> dict[str, dict[str, float]]:
    import rclpy

    from captain_ros.ros.env import ros_environment

    env = ros_environment(ROOT / "build" / "ros-bench", domain)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    out: dict[str, dict[str, float]] = {}
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER], env=env, cwd=ROOT)
    try:
        out["transport (echo RobotCall, 2 processes)"] = _round_trips(ctx, "/bench/call", "x", n)
    finally:
        echo.send_signal(2)
        echo.wait(20)
    stack = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "captain_ros.ros.robot_stack",
            "--ros-args",
            "-p",
            "backend:=mujoco",
            "-p",
            "camera_rate_hz:=0.0",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        out["robot_geometry on the perception node"] = _round_trips(
            ctx, "/captain/perception/call", "robot_geometry", max(50, n // 5)
        )
    finally:
        stack.send_signal(2)
        stack.wait(20)
        ctx.try_shutdown()
    return out


def episode_in_process(task_name: str, seed: int, out_dir: Path) -> dict[str, float]:
    from captain_ros.api.service import RobotService
    from captain_ros.backends import make_backend
    from captain_ros.harness.episode.budgets import Budgets
    from captain_ros.harness.episode.loop import run_episode
    from captain_ros.motion import MotionService
    from captain_ros.perception.service import PerceptionService
    from captain_ros.policy.factory import make_policy
    from captain_ros.tasks import get_task

    task = get_task(task_name)
    t0, c0 = time.perf_counter(), _cpu_s()
    backend = make_backend("mujoco", task.sample(seed))
    svc = RobotService(backend, MotionService(backend), PerceptionService(backend))
    s = run_episode(task, seed, svc, make_policy("scripted"), Budgets(), out_dir)
    total, cpu = time.perf_counter() - t0, _cpu_s() - c0
    backend.close()
    return {
        "episode_wall_s": s.wall_s,
        "total_s": total,
        "cpu_s": cpu,
        "outcome": s.outcome,
        "calls": s.robot_calls,
        "backend_s": s.backend_s,
        "harness_s": s.harness_s,
    }


def episode_ros(
    task_name: str,
    seed: int,
    out_dir: Path,
    domain: int,
    robot_params: dict[str, float] | None = None,
) -> dict[str, float]:
    import rclpy
    from captain_ros_interfaces.action import RunEpisode
    from rclpy.node import Node

    from captain_ros.ros import up as _up
    from captain_ros.ros.action_client import ActionClient
    from captain_ros.ros.env import apply_ros_environment
    from captain_ros.ros.runner import Executors

    CONFIG, compose = _up.CONFIG, _up.compose

    apply_ros_environment(ROOT / "build" / "ros-bench", domain)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    t0, c0 = time.perf_counter(), _cpu_s()
    nodes = compose(
        str(CONFIG),
        "mujoco",
        str(out_dir / "bags"),
        ctx,
        robot_params=robot_params,
        allowed_root=str(out_dir),
    )
    op = Node("bench_operator", context=ctx)
    client = ActionClient(op, RunEpisode, "/captain/run_episode")
    executors = Executors([*nodes, op]).start()
    assert client.wait_for_server(timeout_sec=30.0)
    done = threading.Event()
    fut = client.send_goal_async(
        RunEpisode.Goal(task=task_name, seed=seed, output_dir=str(out_dir))
    )
    fut.add_done_callback(lambda _f: done.set())
    done.wait()
    res_done = threading.Event()
    rfut = fut.result().get_result_async()
    rfut.add_done_callback(lambda _f: res_done.set())
    res_done.wait()
    r = rfut.result().result
    total, cpu = time.perf_counter() - t0, _cpu_s() - c0
    summary = json.loads(r.summary_json)
    executors.shutdown()
    for n in nodes:
        n.destroy_node()
    ctx.try_shutdown()
    return {
        "episode_wall_s": r.wall_time_s,
        "total_s": total,
        "cpu_s": cpu,
        "outcome": r.outcome_label,
        "calls": r.calls,
        "backend_s": summary["backend_s"],
        "harness_s": summary["harness_s"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", type=int, default=1000, help="round trips for the latency figure"
    )
    parser.add_argument("--episodes", type=int, default=1, help="episodes per mode")
    parser.add_argument("--task", default="pick_place")
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--domain-id", type=int, default=91)
    parser.add_argument("--skip-episodes", action="store_true")
    parser.add_argument(
        "--camera-rate-hz",
        type=float,
        default=None,
        help="override the robot node's camera preview rate (default: config)",
    )
    parser.add_argument(
        "--joint-state-rate-hz",
        type=float,
        default=None,
        help="override the robot node's state publishing rate (default: config)",
    )
    args = parser.parse_args()
    overrides = {
        k: v
        for k, v in (
            ("camera_rate_hz", args.camera_rate_hz),
            ("joint_state_rate_hz", args.joint_state_rate_hz),
        )
        if v is not None
    }
    report: dict[str, object] = {"robot_overrides": overrides}
    if args.calls > 0:
        report["latency"] = bench_latency(args.calls, args.domain_id)
    if not args.skip_episodes:
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for k in range(args.episodes):  # alternate so drift in machine load hits both
                rows.append(
                    ("in-process", episode_in_process(args.task, args.seed, Path(tmp) / f"ip{k}"))
                )
                rows.append(
                    (
                        "ros",
                        episode_ros(
                            args.task,
                            args.seed,
                            Path(tmp) / f"ros{k}",
                            args.domain_id + 1 + k,
                            overrides,
                        ),
                    )
                )
        ip = [r for m, r in rows if m == "in-process"]
        ros = [r for m, r in rows if m == "ros"]
        mean = lambda rs, key: statistics.fmean(r[key] for r in rs)  # noqa: E731
        report["episodes"] = {
            "runs": [{"mode": m, **r} for m, r in rows],
            "ratio_episode_wall": round(
                mean(ros, "episode_wall_s") / mean(ip, "episode_wall_s"), 3
            ),
            "ratio_total": round(mean(ros, "total_s") / mean(ip, "total_s"), 3),
            "ratio_cpu": round(mean(ros, "cpu_s") / mean(ip, "cpu_s"), 3),
            "median_ratio_episode_wall": round(
                statistics.median(
                    b["episode_wall_s"] / a["episode_wall_s"] for a, b in zip(ip, ros, strict=True)
                ),
                3,
            ),
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
