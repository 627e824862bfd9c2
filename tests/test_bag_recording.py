"""The recorder's episodes without ROS (captain_ros.bags.recording, captain_ros.bags.recovery): the
episode events open, end and complete a bag, an aborted or orphaned episode closes incomplete after
the held-back time, and a crashed recorder's unclosed bags are made readable at start."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from captain_ros.bags.recording import EVENT_TYPE, KEEP_CLOSED, Recording
from captain_ros.bags.recovery import recover_unclosed, unclosed_bags
from captain_ros.bags.rosbag2 import BagWriter, make_typestore, qos, read_messages, summarize_bag

S = 1_000_000_000  # 1 s in ns
EVENTS = "/captain/episode_events"
STORE = make_typestore()
STRING = STORE.types["std_msgs/msg/String"]


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _text(text: str) -> bytes:
    return bytes(STORE.serialize_cdr(STRING(data=text), "std_msgs/msg/String"))


def _event(episode_id: str, event: str, stamp_ns: int, detail: dict[str, Any]) -> tuple:
    """The arguments of :meth:`Recording.event` for a real serialized ``EpisodeEvent``."""
    time_t = STORE.types["builtin_interfaces/msg/Time"]
    detail_json = json.dumps(detail)
    msg = STORE.types[EVENT_TYPE](
        stamp=time_t(sec=stamp_ns // S, nanosec=stamp_ns % S),
        episode_id=episode_id,
        event=event,
        detail_json=detail_json,
    )
    return episode_id, event, detail_json, stamp_ns, bytes(STORE.serialize_cdr(msg, EVENT_TYPE))


def _recording(tmp_path: Path, clock: Clock, opened: list | None = None) -> Recording:
    # a "now" before every stamp: a message is written once its window has ended
    return Recording(
        tmp_path / "bags",
        events_topic=EVENTS,
        close_grace_s=10.0,
        hold_s=0.3,
        flush_period_s=0.5,
        buffer_s=30.0,
        on_open=None if opened is None else lambda ep, path: opened.append((ep, path)),
        clock=clock,
        now_ns=lambda: 0,
    )


def _publish(rec: Recording, text: str, stamp_ns: int) -> list:
    return rec.message("/a", "std_msgs/msg/String", qos(10), _text(text), stamp_ns, False)


def test_the_events_open_end_and_complete_a_bag(tmp_path: Path) -> None:
    opened: list = []
    rec = _recording(tmp_path, Clock(), opened)
    assert _publish(rec, "early", 10 * S + 1) == []  # before its start event: buffered
    assert rec.event(*_event("ep1", "start", 10 * S, {"task": "pick_place"})) == []
    assert opened == [("ep1", tmp_path / "bags" / "ep1")]
    _publish(rec, "in", 11 * S)
    assert rec.event(*_event("ep1", "end", 12 * S, {"outcome": "success"})) == []
    assert rec.status()["episodes"] == ["ep1"]  # ended, the counts not heard yet
    # the nodes' counts include the events topic itself: that one is never expected
    (closed,) = rec.event(*_event("ep1", "counts", 12 * S, {"published": {"/a": 2, EVENTS: 3}}))
    assert closed.complete and closed.counts == {"/a": 2, EVENTS: 3}
    status = rec.status()
    assert status["open"] == [] and status["last_closed"] == str(tmp_path / "bags" / "ep1")
    assert status["closed"] == [closed.to_dict()]
    texts = [m.data for _t, _s, m in read_messages(tmp_path / "bags" / "ep1", ["/a"])]
    assert texts == ["early", "in"]
    events = [m.event for _t, _s, m in read_messages(tmp_path / "bags" / "ep1", [EVENTS])]
    assert events == ["start", "end", "counts"]


def test_an_aborted_episode_closes_after_what_is_held_back(tmp_path: Path) -> None:
    clock = Clock()
    rec = _recording(tmp_path, clock)
    assert rec.abort_grace_s == 0.8  # hold 0.3 s + flush period 0.5 s
    rec.event(*_event("ep", "start", 10 * S, {}))
    _publish(rec, "in", 11 * S)
    rec.event(*_event("ep", "end", 12 * S, {"aborted": "the policy raised"}))
    clock.t = 0.7
    assert rec.flush() == [] and rec.flushed == {"ep": {"/a": 1, EVENTS: 2}}
    clock.t = 0.8
    (closed,) = rec.flush()
    assert not closed.complete and closed.missing == {}  # no counts were ever announced
    assert rec.flushed == {}


def test_episodes_of_a_dead_policy_end_now_and_close_incomplete(tmp_path: Path) -> None:
    clock = Clock()
    rec = _recording(tmp_path, clock)
    rec.event(*_event("done", "start", 1 * S, {}))
    rec.event(*_event("done", "end", 2 * S, {}))  # waiting for its counts (10 s grace)
    rec.event(*_event("open", "start", 3 * S, {}))
    _publish(rec, "in", 4 * S)
    assert rec.end_unended(5 * S) == ["open"]  # the ended one keeps its own grace
    assert _publish(rec, "after", 6 * S) == []  # after the end: not the episode's
    clock.t = 1.0
    (closed,) = rec.flush()
    assert (closed.episode_id, closed.complete, closed.counts) == (
        "open",
        False,
        {EVENTS: 1, "/a": 1},
    )
    assert rec.status()["episodes"] == ["done"]
    (last,) = rec.close_all()  # shutdown: what is still open closes incomplete
    assert last.episode_id == "done" and not last.complete
    assert [c["episode_id"] for c in rec.status()["closed"]] == ["open", "done"]


def test_the_status_lists_the_last_closed_bags(tmp_path: Path) -> None:
    rec = _recording(tmp_path, Clock())
    for k in range(KEEP_CLOSED + 3):
        rec.event(*_event(f"ep{k:02d}", "start", (2 * k + 1) * S, {}))
        rec.event(*_event(f"ep{k:02d}", "end", (2 * k + 2) * S, {"published": {EVENTS: 2}}))
    closed = rec.status()["closed"]
    assert [c["episode_id"] for c in closed] == [f"ep{k:02d}" for k in range(3, KEEP_CLOSED + 3)]
    assert all(c["complete"] for c in closed)


def test_a_crashed_recorders_bags_are_recovered_and_a_broken_one_reported(tmp_path: Path) -> None:
    out = tmp_path / "bags"
    closed = BagWriter(out / "a_closed", STORE)
    closed.add_topic("/a", "std_msgs/msg/String")
    closed.write("/a", 1, _text("kept"))
    closed.close()
    live = BagWriter(tmp_path / "live", STORE)
    live.add_topic("/a", "std_msgs/msg/String")
    for k in range(3):
        live.write("/a", 10 + k, _text(f"flushed {k}"))
    live.flush()
    live.write("/a", 99, _text("never flushed"))
    (out / "b_crashed").mkdir()  # what a SIGKILL leaves: the flushed part, no metadata.yaml
    for f in (tmp_path / "live").glob("*.mcap"):
        shutil.copy(f, out / "b_crashed" / f.name)
    (out / "c_broken" / "c_broken_0.mcap").mkdir(parents=True)  # unreadable
    (out / "d_empty").mkdir()  # no .mcap: not a bag
    assert [d.name for d in unclosed_bags(out)] == ["b_crashed", "c_broken"]
    done = recover_unclosed(out)
    assert [(Path(r.path).name, r.ok) for r in done] == [("b_crashed", True), ("c_broken", False)]
    assert "Is a directory" in done[1].error
    assert summarize_bag(out / "b_crashed").counts == {"/a": 3}
    assert summarize_bag(out / "a_closed").counts == {"/a": 1}  # a closed bag is left alone
    assert recover_unclosed(tmp_path / "missing") == []
    live.close()
