"""Cost of the robot node's episode gate (docs/ros.md, "Who can command the robot").

    .venv/bin/python benchmarks/bench_ros_access.py [--n 50] [--domain 77]

A robot node on the FakeBackend and a client node (one process, a multi-threaded executor, a
private domain): round trip of a motion call refused by the gate (no active episode), of one
served (``read_motion_trajectory`` inside the episode), and of opening plus closing the gate
(two ``set_parameters`` of ``active_episode``: what the policy node adds per goal). Medians and
maxima in ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _ms(fn: Callable[[], object], n: int) -> tuple[float, float]:
    fn()
    xs = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t) * 1e3)
    return statistics.median(xs), max(xs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--domain", type=int, default=77)
    args = ap.parse_args()
    from captain_ros.ros.env import apply_ros_environment

    apply_ros_environment(ROOT / "build" / "ros", args.domain)
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from captain_ros.backends.fake import FakeBackend
    from captain_ros.ros.calls import RosRobotCaller
    from captain_ros.ros.robot_node import RobotNode
    from captain_ros.ros.runner import bring_up
    from captain_ros.tasks import get_task

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=args.domain)
    robot = RobotNode(backend=FakeBackend(scene=get_task("pick_place").sample(1000)), context=ctx)
    bring_up(robot)
    client = Node("gate_bench", context=ctx)
    caller = RosRobotCaller(client)
    params = AsyncParameterClient(client, "captain_robot")
    executor = MultiThreadedExecutor(num_threads=4, context=ctx)
    for node in (robot, client):
        executor.add_node(node)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    assert params.wait_for_services(10.0)

    def set_active(value: str) -> None:
        done = threading.Event()
        future = params.set_parameters([Parameter("active_episode", value=value)])
        future.add_done_callback(lambda _f: done.set())
        assert done.wait(5.0)

    def call() -> None:
        caller.call("read_motion_trajectory", {})

    caller.episode_id = "bench_episode"
    refused = _ms(call, args.n)
    assert caller.call("read_motion_trajectory", {}).failure_category == "precondition"
    set_active("bench_episode")
    served = _ms(call, args.n)

    def open_and_close() -> None:
        set_active("bench_episode")
        set_active("")

    gate = _ms(open_and_close, args.n)
    for label, (med, top) in (("refused motion call", refused), ("served motion call", served),
                              ("open + close the gate", gate)):  # fmt: skip
        print(f"{label}: median {med:.2f} ms, max {top:.1f} ms")
    executor.shutdown(timeout_sec=5.0)
    spin.join(5.0)
    robot.trigger_shutdown()
    for node in (robot, client):
        node.destroy_node()
    ctx.try_shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
