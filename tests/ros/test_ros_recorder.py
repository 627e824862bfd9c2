"""Recorder node in its own process: records an episode's window, closes complete (or says what is
missing), survives kill -9 and recovers the crashed bag when it starts again."""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest
from builtin_interfaces.msg import Time
from captain_ros_interfaces.msg import EpisodeEvent, Receipt
from rclpy.node import Node
from ros_fixtures import wait_until
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from captain_ros.bags.rosbag2 import read_messages, recover_bag, summarize_bag
from captain_ros.core import Result
from captain_ros.ros import convert
from captain_ros.ros.estop import LATCHED_QOS


@pytest.fixture
def publisher(ros_context, spinner):
    node = Node("episode_source", context=ros_context)
    status: list[dict] = []
    ev = threading.Event()

    def on_status(m: String) -> None:
        status.append(json.loads(m.data))
        ev.set()

    node.create_subscription(String, "/captain/recorder/status", on_status, LATCHED_QOS)
    pubs = {
        "events": node.create_publisher(EpisodeEvent, "/captain/episode_events", 100),
        "receipts": node.create_publisher(Receipt, "/captain/receipts", 100),
        "joints": node.create_publisher(JointState, "/joint_states", 10),
        "tf_static": node.create_publisher(TFMessage, "/tf_static", LATCHED_QOS),
    }
    spinner.add(node)
    return node, pubs, status, ev


def _start_recorder(child_process, out_dir, flush_s=0.1):
    return child_process(
        [
            "-m",
            "captain_ros.ros.recorder_node",
            "--ros-args",
            "-p",
            f"output_dir:={out_dir}",
            "-p",
            f"flush_period_s:={flush_s}",
        ],
        "recorder",
    )


def _receipt(i: int) -> Receipt:
    return convert.result_to_receipt(
        Result.ok("ok", {"i": i}, receipt=f"hold {i}"), "hold", episode_id="ep_test", call_index=i
    )


def _event(episode: str, event: str, detail: dict, at_ns: int) -> EpisodeEvent:
    sec, nanosec = divmod(at_ns, 1_000_000_000)
    return EpisodeEvent(
        stamp=Time(sec=sec, nanosec=nanosec),
        episode_id=episode,
        event=event,
        detail_json=json.dumps(detail),
    )


def _begin(node, pubs, status, ev):
    tf = convert.transform_msg(
        "world",
        "arm_base_link",
        __import__("captain_ros.core", fromlist=["Pose"]).Pose([0, 0, 0]),
        convert.to_time(0),
    )
    pubs["tf_static"].publish(TFMessage(transforms=[tf]))
    wait_until(
        lambda: all(p.get_subscription_count() > 0 for p in pubs.values()),
        30.0,
        ev,
        "the recorder to subscribe to every topic",
    )
    pubs["events"].publish(_event("ep_test", "start", {}, time.time_ns()))
    wait_until(lambda: status and "ep_test" in status[-1]["episodes"], 10.0, ev, "bag opened")


def test_recorder_records_episode_and_closes_bag(publisher, child_process, tmp_path):
    node, pubs, status, ev = publisher
    rec = _start_recorder(child_process, tmp_path)
    _begin(node, pubs, status, ev)
    for i in range(5):
        pubs["receipts"].publish(_receipt(i))
    for k in range(3):
        pubs["joints"].publish(JointState(name=["j1"], position=[0.1 * k]))
    end_ns = time.time_ns()
    pubs["joints"].publish(JointState(name=["j1"], position=[9.0]))  # after the window: not ours
    pubs["events"].publish(
        _event(
            "ep_test",
            "end",
            {"calls": 5, "published": {"/captain/receipts": 5, "/joint_states": 3}},
            end_ns,
        )
    )
    wait_until(lambda: status[-1]["last_closed"].endswith("ep_test"), 15.0, ev, "bag closed")
    assert status[-1]["closed"][-1]["complete"] is True
    assert rec.stop(signal.SIGINT) == 0, rec.output()[-2000:]
    bag = tmp_path / "ep_test"
    s = summarize_bag(bag)
    assert s.counts["/captain/receipts"] == 5 and s.counts["/captain/episode_events"] == 2
    assert s.counts["/joint_states"] == 3 and s.counts["/tf_static"] == 1
    assert s.qos["/tf_static"][0].durability.name == "TRANSIENT_LOCAL"
    assert s.msgtypes["/tf_static"] == "tf2_msgs/msg/TFMessage"
    receipts = [m for _, _, m in read_messages(bag, ["/captain/receipts"])]
    assert sorted(convert.receipt_to_result(m).value["i"] for m in receipts) == [0, 1, 2, 3, 4]
    events = [m.event for _, _, m in read_messages(bag, ["/captain/episode_events"])]
    assert events == ["start", "end"]


def test_recorder_killed_keeps_flushed_messages(publisher, child_process, tmp_path):
    node, pubs, status, ev = publisher
    rec = _start_recorder(child_process, tmp_path, flush_s=0.05)
    _begin(node, pubs, status, ev)
    for i in range(3):
        pubs["receipts"].publish(_receipt(i))
    wait_until(
        lambda: status[-1]["flushed"].get("ep_test", {}).get("/captain/receipts", 0) >= 3,
        15.0,
        ev,
        "three receipts flushed to disk",
    )
    rec.stop(signal.SIGKILL)
    bag = tmp_path / "ep_test"
    assert not (bag / "metadata.yaml").exists()
    # a new recorder (the launch file respawns it) recovers the crashed bag at start
    status.clear()
    rec2 = _start_recorder(child_process, tmp_path)
    wait_until(lambda: status and status[-1]["recovered"] == [str(bag)], 30.0, ev, "recovery")
    assert rec2.stop(signal.SIGINT) == 0
    assert summarize_bag(bag).counts["/captain/receipts"] == 3
    assert [m.receipt for _, _, m in read_messages(bag, ["/captain/receipts"])] == [
        "hold 0",
        "hold 1",
        "hold 2",
    ]
    assert recover_bag(bag) == bag  # a closed bag is left as it is


def test_recorder_is_not_ready_for_a_new_robot_process_until_it_settles(
    publisher, child_process, tmp_path
):
    """A respawned robot's publishers appear just after its heartbeat: a recorder that said
    "ready" at once lost each robot topic's first message (the chaos soak, goals right after a
    robot kill). Its status names the robot process it is ready for, and only after
    ``discovery_settle_s`` of hearing it; the policy node waits for its own robot's name."""
    from captain_ros.ros.liveness import Heartbeat

    node, _pubs, status, ev = publisher
    proc = _start_recorder(child_process, tmp_path / "bags")
    try:
        wait_until(lambda: bool(status) and status[-1]["ready"], 60.0, ev, what="ready")
        assert status[-1]["robot"] == ""
        beat = Heartbeat(node, "robot")
        t0 = time.monotonic()
        wait_until(lambda: status[-1]["robot"] == beat.instance, 30.0, ev, what="the robot")
        first = next(s for s in status if s["robot"] == beat.instance)
        assert first["ready"] is False, first
        wait_until(lambda: status[-1]["ready"], 30.0, ev, what="ready for the robot")
        assert status[-1]["robot"] == beat.instance
        assert time.monotonic() - t0 >= 1.5  # discovery_settle_s 2 s, less the heartbeat's trip
    finally:
        proc.stop()


def test_a_latched_topic_known_first_from_a_subscriber_keeps_its_state(
    publisher, child_process, tmp_path
):
    """The recorder once subscribed to a topic it knew only from a subscriber (the policy node's
    e-stop watcher), with volatile QoS for want of a publisher to copy: the robot's latched
    e-stop state, published before the match, never reached any bag (the CI's chaos soak: the
    e-stopped goal's bag began without the released state). It now subscribes once a publisher
    is known, with that publisher's durability."""
    from std_msgs.msg import Bool

    node, pubs, status, ev = publisher
    node.create_subscription(Bool, "/captain/estop/state", lambda _m: None, LATCHED_QOS)
    rec = _start_recorder(child_process, tmp_path)
    # ready: past its 2 s settle, so its discovery scans (every 0.25 s) have seen the topic
    wait_until(lambda: bool(status) and status[-1]["ready"], 60.0, ev, what="ready")
    state = node.create_publisher(Bool, "/captain/estop/state", LATCHED_QOS)
    state.publish(Bool(data=False))  # at once: before the recorder can have matched it
    wait_until(lambda: state.get_subscription_count() >= 2, 30.0, ev, "the recorder's match")
    _begin(node, pubs, status, ev)
    state.publish(Bool(data=True))  # latched inside the window
    pubs["events"].publish(
        _event(
            "ep_test", "end", {"calls": 0, "published": {"/captain/estop/state": 1}}, time.time_ns()
        )
    )
    wait_until(lambda: status[-1]["last_closed"].endswith("ep_test"), 15.0, ev, "bag closed")
    assert rec.stop(signal.SIGINT) == 0, rec.output()[-2000:]
    bag = tmp_path / "ep_test"
    # subscribed with the publisher's durability (it was volatile, so the state sent before the
    # match never came), and the state at the window's start copied before the window's own
    assert summarize_bag(bag).qos["/captain/estop/state"][0].durability.name == "TRANSIENT_LOCAL"
    states = [m.data for _, _, m in read_messages(bag, ["/captain/estop/state"])]
    assert states in ([False, True], [True]) and states[-1] is True, states
