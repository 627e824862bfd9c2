"""Feedback age of a hardware rig over one episode under the real ``ros2 launch`` (issue 36).

    .venv/bin/python benchmarks/launch_feedback_age.py [--camera-hz 0 5] [--seed 3]
        [--launch-args "backend:=piper emulate:=true"] [--task pick_place]

For each camera preview rate, starts ``ros2 launch captain_ros captain.launch.py <launch args>``
(../shared/ros2-tools) with ``joint_state_rate_hz`` raised so the link topic samples the age often,
subscribes to ``/captain/robot/link`` (the age of each arm's newest joint feedback, what the
stale-feedback guard compares with its 100 ms limit), sends one goal with ``ros2 action send_goal``
and reports the age's p50 / p99 / max over the goal, the episode's outcome, and how loaded the
machine was (load average, CPU busy share from /proc/stat, other processes' CPU share).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VENV_BIN = Path(sys.prefix) / "bin"


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


def _tree_ticks(root_pid: int) -> int:
    """utime + stime jiffies of ``root_pid`` and its descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            text = (d / "stat").read_text()
        except OSError:
            continue
        rest = text.rsplit(")", 1)[1].split()
        children.setdefault(int(rest[1]), []).append(int(d.name))
        stats[int(d.name)] = int(rest[11]) + int(rest[12])
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def _result_fields(text: str) -> dict[str, str]:
    block = text.split("Result:", 1)[1] if "Result:" in text else ""
    return {
        m.group(1): m.group(2).strip().strip("'")
        for line in block.splitlines()
        if (m := re.match(r"\s*(\w+): (.*)$", line))
    }


def run_once(args: argparse.Namespace, camera_hz: float, domain: int, tmp: Path) -> dict[str, Any]:
    from captain_ros.core.share import share_path
    from captain_ros.ros.env import ros_environment

    params = yaml.safe_load(share_path("config", "captain.yaml").read_text())
    params["captain_robot"]["ros__parameters"].update(
        {"joint_state_rate_hz": args.rate_hz, "camera_rate_hz": float(camera_hz)}
    )
    params_file = tmp / f"params-{camera_hz:g}.yaml"
    params_file.write_text(yaml.safe_dump(params))
    env = ros_environment(tmp / "ros", domain)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    env.update(
        AMENT_PREFIX_PATH=str(Path(sys.prefix)),
        PYTHONUNBUFFERED="1",
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    log = (tmp / f"launch-{camera_hz:g}.log").open("w")
    launch = subprocess.Popen(
        [
            str(VENV_BIN / "ros2"),
            "launch",
            "captain_ros",
            "captain.launch.py",
            *args.launch_args.split(),
            f"task:={args.task}",
            f"params_file:={params_file}",
            f"bag_dir:={tmp / 'bags'}",
            f"allowed_root:={tmp}",
        ],
        env=env,
        cwd=tmp,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    os.environ.update(env)  # this process's probe node joins the same domain and middleware
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("feedback_age_probe", context=ctx)
    samples: list[tuple[float, dict[str, Any]]] = []
    node.create_subscription(
        String,
        "/captain/robot/link",
        lambda m: samples.append((time.monotonic(), json.loads(m.data))),
        100,
    )
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    spin = threading.Thread(target=ex.spin, daemon=True)
    spin.start()
    try:
        deadline = time.monotonic() + 240
        while not samples:
            if launch.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(
                    f"the launch exited or never published the link topic; see {log.name}"
                )
            time.sleep(0.2)
        goal = (
            "{"
            + f"task: {args.task}, seed: {args.seed}, output_dir: {tmp / f'ep-{camera_hz:g}'}"
            + "}"
        )
        busy0, total0 = _cpu_ticks()
        ours0 = _tree_ticks(launch.pid) + _tree_ticks(os.getpid())
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        res = subprocess.run(
            [
                str(VENV_BIN / "ros2"),
                "action",
                "send_goal",
                "/captain/run_episode",
                "captain_ros_interfaces/action/RunEpisode",
                goal,
            ],
            env=env,
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=900,
        )
        t1 = time.monotonic()
        busy1, total1 = _cpu_ticks()
        ours1 = _tree_ticks(launch.pid) + _tree_ticks(os.getpid())
    finally:
        os.killpg(launch.pid, signal.SIGINT)
        try:
            launch.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(launch.pid, signal.SIGKILL)
        ex.shutdown(timeout_sec=2.0)
        ctx.try_shutdown()
    ages = np.array(
        [
            a["feedback_age_s"] if a["feedback_age_s"] is not None else np.inf
            for t, m in samples
            if t0 <= t <= t1
            for a in m["arms"].values()
        ],
        dtype=float,
    )
    fields = _result_fields(res.stdout)
    ms = 1e3 * ages
    return {
        "camera_hz": camera_hz,
        "launch_args": args.launch_args,
        "task": args.task,
        "seed": args.seed,
        "samples": int(ages.size),
        "age_p50_ms": round(float(np.percentile(ms, 50)), 1) if ages.size else None,
        "age_p99_ms": round(float(np.percentile(ms, 99)), 1) if ages.size else None,
        "age_max_ms": round(float(ms.max()), 1) if ages.size else None,
        "over_100ms": int((ages > 0.1).sum()),
        "goal_s": round(t1 - t0, 1),
        "outcome": fields.get("outcome_label", "?"),
        "strict_success": fields.get("strict_success"),
        "failures": fields.get("failures"),
        "load_1min_start": round(load0, 2),
        "load_1min_end": round(os.getloadavg()[0], 2),
        "machine_busy_pct": round(
            100.0 * (busy1 - busy0) / max(1, total1 - total0) * (os.cpu_count() or 1), 1
        ),
        "others_cpu_pct": round(
            100.0
            * ((busy1 - busy0) - (ours1 - ours0))
            / max(1, total1 - total0)
            * (os.cpu_count() or 1),
            1,
        ),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launch-args", default="backend:=piper emulate:=true")
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--camera-hz", type=float, nargs="+", default=[0.0, 5.0])
    ap.add_argument(
        "--rate-hz", type=float, default=50.0, help="joint_state_rate_hz (link samples)"
    )
    args = ap.parse_args()
    domain = 60 + os.getpid() % 20
    with tempfile.TemporaryDirectory(prefix="feedback_age_") as d:
        for hz in args.camera_hz:
            print(json.dumps(run_once(args, hz, domain, Path(d))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
