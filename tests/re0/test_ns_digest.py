"""The digest of session variables: stable, content-sensitive, order-free for sets, never runs
policy code, and equal across processes (hash seed fixed by the session)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from captain_ros.harness.sandbox.ns_digest import MAX_ITEMS, ns_digest

BASE = {"np": np, "robot": object()}


def test_same_values_same_digest_and_any_change_shows():
    a = {"x": [1, 2.5, None, "s", b"b", (1, 2)], "d": {"k": np.arange(3)}, **BASE}
    b = {"x": [1, 2.5, None, "s", b"b", (1, 2)], "d": {"k": np.arange(3)}, **BASE}
    assert ns_digest(a, BASE) == ns_digest(b, BASE)
    for change in (
        {"x": [1, 2.5000001, None, "s", b"b", (1, 2)]},
        {"d": {"k": np.arange(3.0)}},
        {"d": {"k": np.arange(3).reshape(3, 1)}},
        {"y": 0},
        {"x": [1, 2.5, None, "s", b"b", [1, 2]]},
    ):
        assert ns_digest({**a, **change}, BASE) != ns_digest(a, BASE), change


def test_sets_are_order_free_and_the_start_namespace_is_left_out():
    assert ns_digest({"s": {"a", "b", "c"}}, {}) == ns_digest({"s": {"c", "b", "a"}}, {})
    assert ns_digest({"np": np}, {"np": np}) == ns_digest({}, {})
    assert ns_digest({"np": 5}, {"np": np}) != ns_digest({}, {})  # a rebound name counts


def test_functions_objects_cycles_and_subclasses():
    def f(x, k=3):
        return x * k

    def g(x, k=4):
        return x * k

    class Box:
        def __init__(self, v):
            self.v = v

        def __getattribute__(self, name):  # policy code must never run
            raise AssertionError("ran policy code")

    class Tagged(dict):
        pass

    cyc: list = [1]
    cyc.append(cyc)
    d1 = ns_digest({"f": f, "b": Box(1), "c": cyc, "t": Tagged(a=1)}, {})
    assert d1 == ns_digest({"f": f, "b": Box(1), "c": cyc, "t": Tagged(a=1)}, {})
    assert d1 != ns_digest({"f": g, "b": Box(1), "c": cyc, "t": Tagged(a=1)}, {})
    assert d1 != ns_digest({"f": f, "b": Box(2), "c": cyc, "t": Tagged(a=1)}, {})
    assert d1 != ns_digest({"f": f, "b": Box(1), "c": cyc, "t": Tagged(a=2)}, {})


def test_huge_values_are_cut_deterministically():
    big = {"v": list(range(MAX_ITEMS + 10))}
    assert ns_digest(big, {}) == ns_digest({"v": list(range(MAX_ITEMS + 10))}, {})


def test_equal_across_processes_with_a_fixed_hash_seed():
    code = (
        "from captain_ros.harness.sandbox.ns_digest import ns_digest\n"
        "print(ns_digest({'s': {'red', 'green', 'blue'}, 'd': {'a': (1.5, 'x')}}, {}))"
    )
    out = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"},
        ).stdout
        for seed in (0, 1, 2)
    }
    assert len(out) == 1 and len(next(iter(out)).strip()) == 64
