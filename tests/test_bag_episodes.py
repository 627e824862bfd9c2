"""Episode windows of the recorder: messages go to the bag of the episode they were published in,
whatever their arrival order; a bag closes complete when it holds what the nodes published."""

from __future__ import annotations

from pathlib import Path

from captain_ros.bags.episodes import EpisodeRouter
from captain_ros.bags.rosbag2 import BagWriter, make_typestore, qos, summarize_bag

S = 1_000_000_000  # 1 s in ns
STORE = make_typestore()
STRING = STORE.types["std_msgs/msg/String"]


def _data(text: str) -> bytes:
    return STORE.serialize_cdr(STRING(data=text), "std_msgs/msg/String")


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _router(tmp_path: Path, clock: Clock) -> EpisodeRouter:
    # a "now" before every stamp: a message is written only once its window has ended
    return EpisodeRouter(
        lambda ep: BagWriter(tmp_path / ep, STORE), buffer_s=30.0, clock=clock, now_ns=lambda: 0
    )


def test_messages_go_to_the_window_they_were_published_in(tmp_path: Path) -> None:
    clock = Clock()
    r = _router(tmp_path, clock)
    q = qos(10)
    r.message(
        "/tf_static",
        "std_msgs/msg/String",
        qos(1, transient_local=True),
        _data("static"),
        1 * S,
        latched=True,
    )
    r.message("/a", "std_msgs/msg/String", q, _data("before"), 9 * S)  # before the episode
    r.message("/a", "std_msgs/msg/String", q, _data("early"), 10 * S + 5)  # arrives before 'start'
    r.start("ep1", 10 * S)
    r.message("/a", "std_msgs/msg/String", q, _data("in"), 11 * S)
    r.message("/a", "std_msgs/msg/String", q, _data("after"), 12 * S + 1)  # before 'end' arrives
    r.end("ep1", 12 * S, grace_s=5.0)
    r.expect("ep1", {"/a": 3})
    assert r.poll() == []  # one message of the window is still in flight
    r.start("ep2", 13 * S)  # the next episode starts while ep1 drains
    r.message("/a", "std_msgs/msg/String", q, _data("next"), 13 * S + 1)
    r.message("/a", "std_msgs/msg/String", q, _data("late"), 12 * S - 1)  # published in ep1, late
    closed = r.poll()
    assert [(c.episode_id, c.complete, c.counts["/a"]) for c in closed] == [("ep1", True, 3)]
    r.end("ep2", 14 * S, grace_s=5.0)
    r.expect("ep2", {"/a": 2})
    clock.t = 6.0  # past the grace: ep2 closes incomplete, saying what is missing
    (c2,) = r.poll()
    assert not c2.complete and c2.missing == {"/a": 1} and c2.counts["/a"] == 1
    s1 = summarize_bag(tmp_path / "ep1")
    assert s1.counts == {"/tf_static": 1, "/a": 3}  # the latched copy, then the window's three
    from captain_ros.bags.rosbag2 import read_messages

    texts = [m.data for _t, _ts, m in read_messages(tmp_path / "ep1", ["/a"])]
    assert texts == ["early", "in", "late"]  # in publish order, not arrival order
    assert [m.data for _t, _ts, m in read_messages(tmp_path / "ep2", ["/a"])] == ["next"]


def test_recent_messages_wait_for_their_window_to_end(tmp_path: Path) -> None:
    now = [100 * S]
    r = EpisodeRouter(lambda ep: BagWriter(tmp_path / ep, STORE), hold_s=0.3, now_ns=lambda: now[0])
    r.start("ep", 99 * S)
    r.message("/a", "std_msgs/msg/String", qos(10), _data("old"), 100 * S - S // 2)
    r.message("/a", "std_msgs/msg/String", qos(10), _data("new"), 100 * S - S // 10)  # held back
    r.message("/a", "std_msgs/msg/String", qos(10), _data("after end"), 100 * S - S // 20)
    assert r.windows[0].counts["/a"] == 1
    r.end("ep", 100 * S - S // 15, grace_s=1.0)  # the end falls between the last two
    assert r.windows[0].counts["/a"] == 2 and not r.windows[0].pending
    r.expect("ep", {"/a": 2})
    assert r.poll()[0].complete


def test_a_latched_topic_published_inside_a_window_is_in_its_bag(tmp_path: Path) -> None:
    """An e-stop latched mid-episode (``/captain/estop/state``, transient local): its bag once
    held only the state copied at the start and still closed "complete" (the chaos soak found it,
    benchmarks/bench_chaos_soak.py): the transition was in no bag."""
    BOOL = STORE.types["std_msgs/msg/Bool"]

    def state(v: bool) -> bytes:
        return STORE.serialize_cdr(BOOL(data=v), "std_msgs/msg/Bool")

    latched_q = qos(1, transient_local=True)
    r = _router(tmp_path, Clock())
    r.message("/estop", "std_msgs/msg/Bool", latched_q, state(False), 1 * S, latched=True)
    r.start("ep", 10 * S)
    r.message("/estop", "std_msgs/msg/Bool", latched_q, state(True), 11 * S, latched=True)
    r.message("/estop", "std_msgs/msg/Bool", latched_q, state(True), 11 * S + 5, latched=True)
    r.message("/later", "std_msgs/msg/Bool", latched_q, state(True), 11 * S + 9, latched=True)
    r.end("ep", 12 * S, grace_s=5.0)
    r.expect("ep", {"/estop": 2, "/later": 1})  # what the nodes published in the window
    (closed,) = r.poll()
    assert closed.complete and closed.counts == {"/estop": 2, "/later": 1}, closed
    from captain_ros.bags.rosbag2 import read_messages

    got = [(t, ts, m.data) for t, ts, m in read_messages(tmp_path / "ep")]
    # the state at the start (the copy), the two published in the window; a topic first seen
    # inside the window is its message, not also a copy
    assert got == [
        ("/estop", 10 * S, False),
        ("/estop", 11 * S, True),
        ("/estop", 11 * S + 5, True),
        ("/later", 11 * S + 9, True),
    ], got
    # a window missing a latched message it should hold is not complete
    r.start("ep2", 20 * S)
    r.end("ep2", 21 * S, grace_s=0.0)
    r.expect("ep2", {"/estop": 1})
    (c2,) = r.poll()
    assert not c2.complete and c2.missing == {"/estop": 1}


def test_buffer_is_bounded(tmp_path: Path) -> None:
    r = EpisodeRouter(lambda ep: BagWriter(tmp_path / ep, STORE), buffer_s=1.0, buffer_bytes=10_000)
    for k in range(200):
        r.message("/b", "std_msgs/msg/String", qos(10), _data("x" * 200), k * S // 10)
    assert r._buffered_bytes <= 10_000
    w = r.start("ep", 0)
    assert w.counts["/b"] <= 10_000 // 200  # only what the bounded buffer still held
    r.close_all()


def test_header_stamps_are_read_from_the_cdr_bytes() -> None:
    from captain_ros.bags.episodes import stamp_of_cdr, stamp_of_message
    from captain_ros.bags.messages import Messages
    from captain_ros.core.geometry import Pose
    from captain_ros.core.types import JointState

    m = Messages(STORE)
    at_s = 1796000000.123456789
    js = m.joint_states([JointState(("j1",), [0.1], [0.0], [0.0], 0.0)], at_s)
    tf = m.tf([m.transform("world", "tcp", Pose([0, 0, 0]), at_s)])
    for msg, msgtype in ((js, "sensor_msgs/msg/JointState"), (tf, "tf2_msgs/msg/TFMessage")):
        data = STORE.serialize_cdr(msg, msgtype)
        assert stamp_of_cdr(msgtype, data) == stamp_of_message(msg)
        assert abs(stamp_of_cdr(msgtype, data) - int(at_s * 1e9)) < 1000
    assert stamp_of_cdr("std_msgs/msg/String", _data("no header")) is None
    assert (
        stamp_of_cdr(
            "tf2_msgs/msg/TFMessage", STORE.serialize_cdr(m.tf([]), "tf2_msgs/msg/TFMessage")
        )
        is None
    )
