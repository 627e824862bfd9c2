"""The publish log's stamp store: exact window counts, a bounded footprint, late stamps."""

from __future__ import annotations

import random

import pytest

from captain_ros.bags.stamp_log import TRIM_MIN, StampLog


def _reference(stamps: list[int], keep_ns: int, start: int, end: int) -> int:
    newest = max(stamps)
    return sum(1 for s in stamps if s >= newest - keep_ns and start <= s <= end)


def test_counts_match_a_brute_force_reference_with_late_stamps() -> None:
    rng = random.Random(3)
    log = StampLog(keep_ns=50_000)
    seen: dict[str, list[int]] = {"a": [], "b": []}
    t = 0
    for _ in range(30_000):
        t += rng.randint(0, 20)
        topic = rng.choice("ab")
        stamp = t - (rng.randint(1, 200) if rng.random() < 0.05 else 0)  # some arrive late
        log.record(topic, stamp)
        seen[topic].append(stamp)
    for _ in range(60):
        lo = rng.randint(t - 80_000, t)
        hi = lo + rng.randint(0, 30_000)
        for topic, stamps in seen.items():
            assert log.count(topic, lo, hi) == _reference(stamps, 50_000, lo, hi)
    assert log.counts(t + 1, t + 10) == {}
    assert log.count("absent", 0, t) == 0


def test_memory_stays_bounded_by_the_window() -> None:
    log = StampLog(keep_ns=1_000)
    for t in range(200_000):
        log.record("/joint_states", t)
    assert log.kept("/joint_states") == 1_001  # stamps t-1000 .. t
    assert log.nbytes() <= 8 * (2 * max(TRIM_MIN, 1_001) + 2)  # 8 bytes a stamp, cut in blocks
    assert log.count("/joint_states", 0, 200_000) == 1_001


def test_a_stamp_older_than_the_window_is_not_counted() -> None:
    log = StampLog(keep_ns=100)
    for t in (1_000, 1_050, 1_100):
        log.record("t", t)
    log.record("t", 900)  # late, and already outside the window of the newest stamp
    assert log.count("t", 0, 2_000) == 3
    log.record("t", 1_005)  # late but inside
    assert log.count("t", 1_000, 1_010) == 2


def test_a_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="keep_ns"):
        StampLog(0)
