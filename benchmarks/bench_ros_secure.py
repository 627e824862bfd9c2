"""Cost of the secured graph's credentials (docs/ros.md, "The secured graph").

    .venv/bin/python benchmarks/bench_ros_secure.py [--n 50] [--domain 78]

A robot node on the FakeBackend and a client node in one process (a multi-threaded executor, a
private domain), once open and once with ``key_file``: the round trip of a served motion call
(``read_motion_trajectory`` inside the episode; signed by the caller and checked by the robot node
when secured) and of a refused one (an unsigned call to the secured node). Also the pure cost of
making and checking one credential. Medians and maxima in ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _graph(domain: int, key_file: str, n: int) -> dict[str, tuple[float, float]]:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from captain_ros.backends.fake import FakeBackend
    from captain_ros.ros.calls import RosRobotCaller
    from captain_ros.ros.credential import Signer, load_key
    from captain_ros.ros.robot_node import RobotNode
    from captain_ros.ros.runner import bring_up
    from captain_ros.tasks import get_task

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    over = [Parameter("active_episode", value="bench_episode")]
    if key_file:
        over.append(Parameter("key_file", value=key_file))
    robot = RobotNode(
        backend=FakeBackend(scene=get_task("pick_place").sample(1000)),
        context=ctx,
        parameter_overrides=over,
    )
    bring_up(robot)
    client = Node("secure_bench", context=ctx)
    caller = RosRobotCaller(client)
    caller.episode_id = "bench_episode"
    executor = MultiThreadedExecutor(num_threads=4, context=ctx)
    for node in (robot, client):
        executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()

    def call() -> Any:
        return caller.call("read_motion_trajectory", {})

    out: dict[str, tuple[float, float]] = {}
    if key_file:
        assert not call().success  # unsigned: refused
        out["refused (unsigned, secured)"] = _ms(call, n)
        caller.signer = Signer(load_key(key_file))
    result = call()
    assert result.success, result.message
    out["served " + ("(signed, secured)" if key_file else "(open)")] = _ms(call, n)
    executor.shutdown(timeout_sec=2.0)
    robot.destroy_node()
    client.destroy_node()
    ctx.try_shutdown()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--domain", type=int, default=78)
    args = ap.parse_args()
    from captain_ros.ros.credential import Signer, Verifier, generate_key
    from captain_ros.ros.env import apply_ros_environment

    apply_ros_environment(ROOT / "build" / "ros", args.domain)
    key_file = str(generate_key(Path(tempfile.mkdtemp()) / "bench.key"))
    signer, verifier = Signer(b"k" * 32), Verifier(b"k" * 32)
    fields = {
        "capability": "move_to",
        "kwargs_json": '{"arm": "arm", "x": 0.3}',
        "episode_id": "e",
        "request_index": 1,
    }
    rows = {
        "make + check one credential (pure)": _ms(
            lambda: verifier.check("call", fields, signer.token("call", fields)), args.n * 20
        )
    }
    rows.update(_graph(args.domain, "", args.n))
    rows.update(_graph(args.domain, key_file, args.n))
    print("| round trip | median [ms] | max [ms] |\n|---|---|---|")
    for name, (med, mx) in rows.items():
        print(f"| {name} | {med:.3f} | {mx:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
