"""What an operator and a researcher must be able to trust, through the real `ros2 launch` graph:
no message lost or misattributed in ten runs of one deterministic episode; a recorder killed
mid-episode (respawned by the launch file) leaves a readable bag reported incomplete; the e-stop
latch survives new goals and scene loads until an operator resets it; every count in a result
belongs to that episode alone."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from action_msgs.msg import GoalStatus
from captain_ros_interfaces.action import RunEpisode
from captain_ros_interfaces.srv import LoadScene
from rclpy.node import Node
from ros_cli import RosCli, cli_env, require_ros2_cli
from ros_fixtures import STATE_DIR, Spinner, wait_until
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from captain_ros.bags.episodes import published_in_window
from captain_ros.bags.rosbag2 import summarize_bag
from captain_ros.ros.action_client import ActionClient
from captain_ros.ros.calls import call_sync
from captain_ros.ros.estop import LATCHED_QOS
from captain_ros.ros.qos import FEEDBACK_QOS

pytestmark = pytest.mark.slow
EVENT_TOPICS = (
    "/captain/receipts",
    "/captain/observations",
    "/captain/privileged",
    "/camera/head/image_raw",
    "/camera/head/depth/image_raw",
    "/camera/head/camera_info",
    "/camera/wrist/image_raw",
)
"""Topics published by what the episode does (not by wall-clock timers)."""


class Graph:
    def __init__(self, cli: RosCli, proc: object, node: Node, tmp: Path) -> None:
        self.cli, self.proc, self.node, self.tmp = cli, proc, node, tmp
        self.client = ActionClient(
            node, RunEpisode, "/captain/run_episode", feedback_sub_qos_profile=FEEDBACK_QOS
        )
        self.estop_state: list[bool] = []
        self.recorder: list[dict] = []
        node.create_subscription(
            Bool, "/captain/estop/state", lambda m: self.estop_state.append(m.data), LATCHED_QOS
        )
        node.create_subscription(
            String,
            "/captain/recorder/status",
            lambda m: self.recorder.append(json.loads(m.data)),
            LATCHED_QOS,
        )

    def run(self, timeout_s: float = 300.0, on_feedback: object = None, **goal: object) -> object:
        done = threading.Event()
        fut = self.client.send_goal_async(RunEpisode.Goal(**goal), feedback_callback=on_feedback)
        fut.add_done_callback(lambda _f: done.set())
        assert done.wait(60), "goal not answered"
        handle = fut.result()
        assert handle.accepted
        done.clear()
        res = handle.get_result_async()
        res.add_done_callback(lambda _f: done.set())
        assert done.wait(timeout_s), "no result"
        return res.result()

    def pid_of(self, name: str) -> int:
        log = self.cli.log_of(self.proc)  # type: ignore[arg-type]
        pids = re.findall(rf"\[{name}-\d+\]: process started with pid \[(\d+)\]", log)
        return int(pids[-1])


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    import rclpy

    require_ros2_cli()
    tmp = tmp_path_factory.mktemp("trust")
    domain = 80 + os.getpid() % 10
    cli = RosCli(cli_env(domain), tmp)
    proc = cli.start(
        "launch",
        "captain_ros",
        "captain.launch.py",
        "backend:=fake",
        f"bag_dir:={tmp / 'bags'}",
        f"allowed_root:={tmp}",
        log=STATE_DIR / "children" / f"trust-{domain}.log",
    )
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = Node("operator", context=ctx)
    spinner = Spinner(ctx)
    g = Graph(cli, proc, node, tmp)
    spinner.add(node)
    try:
        assert g.client.wait_for_server(timeout_sec=180.0), cli.log_of(proc)[-3000:]
        wait_until(
            lambda: node.count_publishers("/captain/recorder/status") > 0, 60.0, what="the recorder"
        )
        yield g
    finally:
        spinner.shutdown()
        node.destroy_node()
        ctx.try_shutdown()
        cli.stop_all()


def _published(bag: str) -> dict[str, int]:
    """What the nodes published in the episode's window (the counts event's detail)."""
    published = published_in_window(bag)
    assert published is not None, f"{bag} has no counts event"
    return published


def test_ten_runs_lose_nothing_and_mix_nothing(graph: Graph) -> None:
    counts = []
    for k in range(10):
        r = graph.run(task="pick_place", seed=3, output_dir=str(graph.tmp / f"det_{k}"))
        assert r.status == GoalStatus.STATUS_SUCCEEDED and r.result.bag_complete, (
            r.result.bag_status
        )
        s = summarize_bag(r.result.bag_path)
        published = _published(r.result.bag_path)
        for topic, n in published.items():  # every message published in the window is in the bag
            if topic != "/captain/episode_events":
                assert s.counts.get(topic, 0) == n, (k, topic, s.counts.get(topic), n)
        assert s.counts["/captain/receipts"] == r.result.calls
        counts.append({t: s.counts.get(t, 0) for t in EVENT_TOPICS})
    assert all(c == counts[0] for c in counts), counts  # one deterministic episode, ten equal bags
    assert counts[0]["/camera/head/image_raw"] > 0 and counts[0]["/captain/privileged"] > 0


def test_killed_recorder_leaves_a_readable_bag_reported_incomplete(graph: Graph) -> None:
    moved = threading.Event()
    last_feedback = [0.0]
    episode: list[str] = []

    def on_fb(fb: object) -> None:
        last_feedback[0] = time.monotonic()
        episode[:] = [fb.feedback.receipts[0].episode_id]  # type: ignore[attr-defined]
        if any(r.capability == "move_to" for r in fb.feedback.receipts):  # type: ignore[attr-defined]
            moved.set()

    box: dict[str, object] = {}
    thread = threading.Thread(
        target=lambda: box.update(
            r=graph.run(
                task="pick_place", seed=4, on_feedback=on_fb, output_dir=str(graph.tmp / "killed")
            )
        )
    )
    thread.start()
    assert moved.wait(120)

    def flushed() -> int:  # receipts on disk: the status is published right after a flush
        return int(
            graph.recorder[-1].get("flushed", {}).get(episode[0], {}).get("/captain/receipts", 0)
            if graph.recorder
            else 0
        )

    wait_until(lambda: flushed() >= 3, 60.0, what="receipts flushed to the bag")
    on_disk = flushed()
    os.kill(graph.pid_of("captain_recorder"), signal.SIGKILL)
    thread.join(300)
    r = box["r"].result  # type: ignore[attr-defined]
    assert not r.bag_complete and r.bag_status.startswith("incomplete: the recorder")
    assert (
        r.bag_path and time.monotonic() - last_feedback[0] < 10.0
    )  # no long wait on a dead recorder
    # the respawned recorder recovered the crashed bag at start: rosbags opens it
    wait_until(lambda: (Path(r.bag_path) / "metadata.yaml").exists(), 60.0, what="recovery")
    receipts = summarize_bag(r.bag_path).counts.get("/captain/receipts", 0)
    assert on_disk <= receipts <= r.calls  # a SIGKILL lost at most what was not flushed yet
    summary = json.loads((graph.tmp / "killed" / "summary.json").read_text())
    assert summary["bag_complete"] is False and "recorder" in summary["extra"]["bag_status"]
    # the next goal gets a complete bag from the new recorder
    wait_until(
        lambda: graph.node.count_publishers("/captain/recorder/status") > 0,
        60.0,
        what="the respawned recorder",
    )
    nxt = graph.run(
        task="pick_place", seed=5, max_requests=3, output_dir=str(graph.tmp / "after_kill")
    )
    assert nxt.result.bag_complete, nxt.result.bag_status


def test_estop_latch_survives_goals_and_scene_loads_until_reset(graph: Graph) -> None:
    node = graph.node
    trigger = node.create_client(Trigger, "/captain/estop/trigger")
    reset = node.create_client(Trigger, "/captain/estop/reset")
    load = node.create_client(LoadScene, "/captain/robot/load_scene")
    assert trigger.wait_for_service(timeout_sec=30) and reset.wait_for_service(timeout_sec=30)
    assert call_sync(trigger, Trigger.Request(), 10.0).success
    wait_until(lambda: graph.estop_state and graph.estop_state[-1], 10.0, what="latched state")
    for seed in (6, 7):
        r = graph.run(task="pick_place", seed=seed, output_dir=str(graph.tmp / f"estop_{seed}"))
        assert r.status == GoalStatus.STATUS_ABORTED and r.result.outcome_label == "estop"
        assert "/captain/estop/reset" in json.loads(r.result.summary_json)["error"]
    assert call_sync(load, LoadScene.Request(task="stack", seed=8), 60.0).success  # a scene load
    assert call_sync(load, LoadScene.Request(task="stack", seed=8), 60.0).success  # a scene reset
    still = graph.run(task="pick_place", seed=9, output_dir=str(graph.tmp / "estop_9"))
    assert still.result.outcome_label == "estop"
    assert call_sync(reset, Trigger.Request(), 10.0).success
    ok = graph.run(
        task="pick_place", seed=9, max_requests=3, output_dir=str(graph.tmp / "after_reset")
    )
    assert ok.status == GoalStatus.STATUS_SUCCEEDED and ok.result.outcome_label != "estop"


def test_each_result_counts_its_own_episode_only(graph: Graph) -> None:
    for failures in (3, 0, 1):
        replay = graph.tmp / f"fail_{failures}.jsonl"
        cell = "\n".join(["r = robot.move_to(position=[5.0, 5.0, 5.0])"] * failures) or "x = 1"
        replay.write_text(json.dumps({"code": cell}) + "\n")
        r = graph.run(
            task="pick_place",
            seed=10,
            policy=f"replay:{replay}",
            output_dir=str(graph.tmp / f"count_{failures}"),
        )
        assert r.status == GoalStatus.STATUS_SUCCEEDED
        assert r.result.failures == failures and r.result.calls == failures
        summary = json.loads(r.result.summary_json)
        assert summary["failed_actions"] == failures and summary["requests"] == r.result.requests
