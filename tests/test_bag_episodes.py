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
    return EpisodeRouter(lambda ep: BagWriter(tmp_path / ep, STORE), buffer_s=30.0, clock=clock)


def test_messages_go_to_the_window_they_were_published_in(tmp_path: Path) -> None:
    clock = Clock()
    r = _router(tmp_path, clock)
    q = qos(10)
    r.message("/tf_static", "std_msgs/msg/String", qos(1, transient_local=True), _data("static"), 1 * S,
              latched=True)
    r.message("/a", "std_msgs/msg/String", q, _data("before"), 9 * S)       # before the episode
    r.message("/a", "std_msgs/msg/String", q, _data("early"), 10 * S + 5)   # arrives before 'start'
    r.start("ep1", 10 * S)
    r.message("/a", "std_msgs/msg/String", q, _data("in"), 11 * S)
    r.end("ep1", 12 * S, {"/a": 3}, grace_s=5.0)
    assert r.poll() == []  # one message of the window is still in flight
    r.start("ep2", 13 * S)  # the next episode starts while ep1 drains
    r.message("/a", "std_msgs/msg/String", q, _data("next"), 13 * S + 1)
    r.message("/a", "std_msgs/msg/String", q, _data("late"), 12 * S - 1)  # published in ep1, late
    closed = r.poll()
    assert [(c.episode_id, c.complete, c.counts["/a"]) for c in closed] == [("ep1", True, 3)]
    r.end("ep2", 14 * S, {"/a": 2}, grace_s=5.0)
    clock.t = 6.0  # past the grace: ep2 closes incomplete, saying what is missing
    (c2,) = r.poll()
    assert not c2.complete and c2.missing == {"/a": 1} and c2.counts["/a"] == 1
    s1 = summarize_bag(tmp_path / "ep1")
    assert s1.counts == {"/tf_static": 1, "/a": 3}  # the latched copy, then the window's three
    from captain_ros.bags.rosbag2 import read_messages

    texts = [m.data for _t, _ts, m in read_messages(tmp_path / "ep1", ["/a"])]
    assert texts == ["early", "in", "late"]  # in publish order, not arrival order
    assert [m.data for _t, _ts, m in read_messages(tmp_path / "ep2", ["/a"])] == ["next"]


def test_buffer_is_bounded(tmp_path: Path) -> None:
    r = EpisodeRouter(lambda ep: BagWriter(tmp_path / ep, STORE), buffer_s=1.0, buffer_bytes=10_000)
    for k in range(200):
        r.message("/b", "std_msgs/msg/String", qos(10), _data("x" * 200), k * S // 10)
    assert r._buffered_bytes <= 10_000
    w = r.start("ep", 0)
    assert w.counts["/b"] <= 10_000 // 200  # only what the bounded buffer still held
    r.close_all()
