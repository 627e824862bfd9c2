"""Soak (issue 17 item 6): N goals through the real ``ros2 launch`` graph, RSS of every process.

Starts ``ros2 launch captain_ros captain.launch.py backend:=fake`` (or ``mujoco``) on a private ROS
domain, sends ``--goals`` RunEpisode goals one after another (scripted expert, train seeds cycling
over ``--seeds``), and after every goal samples the resident set size of each process the launch
started (``/proc/<pid>/status``, VmRSS). Every goal must succeed with a complete bag; a bag's
per-topic counts must equal what the nodes report having published in its window (the ``counts``
episode event). Reports: failed goals, incomplete bags, lost messages (published minus recorded,
summed), RSS per process after warm-up and at the end (growth in %), goal wall time; and, as the
physical limit of the same run, the same episode in-process (``captain run``) wall time.

Run: ``.venv/bin/python benchmarks/bench_soak.py --goals 200 --out runs/soak`` (about 25 min on
the 2-core CPU with the fake backend); ``--json`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def launched_pids(log: Path) -> dict[str, int]:
    """``name -> pid`` of the processes ``ros2 launch`` reports having started."""
    found = re.findall(r"\[(\w+)-\d+\]: process started with pid \[(\d+)\]", log.read_text())
    return {name: int(pid) for name, pid in found}


def published_minus_recorded(bag: str) -> int:
    """Messages the nodes published in the bag's window that it lacks; -1 when the bag is not
    closed (no metadata yet) or holds no counts event."""
    from captain_ros.bags.episodes import published_in_window
    from captain_ros.bags.rosbag2 import summarize_bag

    published = published_in_window(bag) if (Path(bag) / "metadata.yaml").is_file() else None
    if published is None:
        return -1
    recorded = summarize_bag(bag).counts
    return sum(
        max(0, n - recorded.get(t, 0))
        for t, n in published.items()
        if t != "/captain/episode_events"
    )


def _launch_child_setup() -> None:
    """In the launch's process before exec: SIGINT at its default (a shell's background job
    ignores it, and ``ros2 launch`` then ignored the stop while its nodes died of it and were
    respawned), and a SIGINT to it when this process dies (no orphaned graph when the benchmark
    is killed)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG


def start_graph(out: Path, backend: str, domain: int) -> tuple[subprocess.Popen[bytes], Path]:
    """``ros2 launch captain_ros captain.launch.py backend:=BACKEND`` on ``domain`` (bags under
    ``out/bags``, output folders confined to ``out``), its output in ``out/launch.log``; this
    process's ROS environment is set to the same domain. Returns the launch and its log."""
    from captain_ros.ros.env import apply_ros_environment, ros_environment

    state = out / "ros"
    env = ros_environment(state, domain)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    env["AMENT_PREFIX_PATH"] = str(VENV)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    log = out / "launch.log"
    launch = subprocess.Popen(
        [
            str(VENV / "bin" / "ros2"),
            "launch",
            "captain_ros",
            "captain.launch.py",
            f"backend:={backend}",
            f"bag_dir:={out / 'bags'}",
            f"allowed_root:={out}",
        ],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_launch_child_setup,
    )
    apply_ros_environment(state, domain)
    return launch, log


def stop_graph(launch: subprocess.Popen[bytes]) -> None:
    """SIGINT to the launch's process group; SIGKILL after 60 s."""
    os.killpg(launch.pid, 2)
    try:
        launch.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(launch.pid, 9)


class Operator:
    """An rclpy client on the soak's domain: sends goals, waits for results."""

    def __init__(self, domain: int) -> None:
        import rclpy
        from captain_ros_interfaces.action import RunEpisode
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.node import Node

        from captain_ros.ros.action_client import ActionClient
        from captain_ros.ros.qos import FEEDBACK_QOS

        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx, domain_id=domain)
        self.node = Node("soak_operator", context=self.ctx)
        self.RunEpisode = RunEpisode
        self.client = ActionClient(
            self.node, RunEpisode, "/captain/run_episode", feedback_sub_qos_profile=FEEDBACK_QOS
        )
        self.executor = MultiThreadedExecutor(context=self.ctx)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def run(self, timeout_s: float = 600.0, **goal: Any) -> Any:
        done = threading.Event()
        fut = self.client.send_goal_async(self.RunEpisode.Goal(**goal))
        fut.add_done_callback(lambda _f: done.set())
        if not done.wait(60):
            raise RuntimeError("goal not answered")
        handle = fut.result()
        if not handle.accepted:
            raise RuntimeError("goal rejected")
        done.clear()
        res = handle.get_result_async()
        res.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout_s):
            raise RuntimeError("no result")
        return res.result()

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self.node.destroy_node()
        self.ctx.try_shutdown()


def in_process_wall_s(task: str, seed: int, backend: str, out: Path) -> float:
    """The same episode in one process (``captain run``): its episode wall time [s]."""
    proc = subprocess.run(
        [
            str(VENV / "bin" / "captain"),
            "run",
            "--task",
            task,
            "--seed",
            str(seed),
            "--backend",
            backend,
            "--out",
            str(out),
            "--overwrite",
            "--json",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(json.loads(proc.stdout)["wall_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--goals", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20, help="goals before the RSS baseline")
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seeds", default="0-49", help="train seeds the goals cycle over (A-B)")
    ap.add_argument("--backend", default="fake", choices=("fake", "mujoco"))
    ap.add_argument("--out", default="runs/soak")
    ap.add_argument("--domain", type=int, default=90 + os.getpid() % 10)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split("-"))
    seeds = list(range(lo, hi + 1))
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    launch, log = start_graph(out, a.backend, a.domain)
    op = Operator(a.domain)
    rows: list[dict[str, Any]] = []
    rss: dict[str, list[float]] = {}
    try:
        if not op.client.wait_for_server(timeout_sec=180.0):
            raise SystemExit(f"the policy node did not come up; see {log}")
        for k in range(a.goals):
            seed = seeds[k % len(seeds)]
            t = time.perf_counter()
            r = op.run(task=a.task, seed=seed, output_dir=str(out / "episodes" / f"{k:04d}"))
            wall = time.perf_counter() - t
            res = r.result
            lost = published_minus_recorded(res.bag_path) if res.bag_path else -1
            rows.append(
                {
                    "goal": k,
                    "seed": seed,
                    "status": int(r.status),
                    "outcome": res.outcome_label,
                    "bag_complete": bool(res.bag_complete),
                    "bag_status": res.bag_status,
                    "lost": lost,
                    "wall_s": wall,
                }
            )
            for name, pid in launched_pids(log).items():
                v = rss_mib(pid)
                if v is not None:
                    rss.setdefault(name, []).append(v)
            print(
                f"[{k + 1}/{a.goals}] seed {seed} {res.outcome_label} bag "
                f"{'complete' if res.bag_complete else res.bag_status} lost {lost} {wall:.1f} s",
                flush=True,
            )
    finally:
        op.close()
        stop_graph(launch)
    limit = in_process_wall_s(a.task, seeds[0], a.backend, out / "in_process")
    w = min(a.warmup, max(0, len(rows) - 1))
    figures = {
        "goals": len(rows),
        "backend": a.backend,
        "task": a.task,
        "failed_goals": sum(r["status"] != 4 for r in rows),
        "incomplete_bags": sum(not r["bag_complete"] for r in rows),
        "lost_messages": sum(max(0, r["lost"]) for r in rows),
        "bags_without_counts": sum(r["lost"] < 0 for r in rows),
        "goal_wall_s_median": median(r["wall_s"] for r in rows) if rows else 0.0,
        "in_process_wall_s": limit,
        "rss_mib": {
            n: {
                "after_warmup": v[w],
                "end": v[-1],
                "max": max(v),
                "growth_pct": 100.0 * (v[-1] - v[w]) / v[w],
            }
            for n, v in rss.items()
            if v
        },
    }
    (out / "soak.json").write_text(
        json.dumps({"figures": figures, "goals": rows, "rss_series_mib": rss}, indent=2)
    )
    if a.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"{figures['goals']} goals: {figures['failed_goals']} failed, "
            f"{figures['incomplete_bags']} incomplete bags, {figures['lost_messages']} lost messages; "
            f"median goal {figures['goal_wall_s_median']:.1f} s (in-process episode {limit:.1f} s)"
        )
        for n, v in figures["rss_mib"].items():
            print(
                f"  {n:<12} RSS {v['after_warmup']:.0f} MiB after warm-up -> {v['end']:.0f} MiB "
                f"({v['growth_pct']:+.1f} %), max {v['max']:.0f} MiB"
            )
    return 0 if figures["failed_goals"] == 0 and figures["lost_messages"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
