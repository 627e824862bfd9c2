"""Decision points of a whole episode: restore s_t, run the original continuation, get the same
trajectory (receipts, Results, final state), session variables included; refusals say why."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from re0_helpers import frozen_clock, record, replay_policy, strip_timing

from captain_ros.evaluation.episode import build_robot
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.episode.loop import run_episode
from captain_ros.harness.record.privileged_log import load_episode_record
from captain_ros.harness.record.robot_state import RestoreRefused
from captain_ros.harness.record.trajectory import load_history
from captain_ros.harness.sandbox.session import SessionConfig
from captain_ros.policy.replay import ReplayPolicy
from captain_ros.policy.scripted import ScriptedPolicy
from captain_ros.research.re0.decision_points import (
    DecisionPointSource,
    RecordedEpisode,
    check_restorable,
    rebuild_robot_side,
    rehydrate_policy,
    restore_decision_point,
)

VARIABLES = [
    # request 1: variables of many kinds, a robot result kept in a variable
    "S = {'red', 'green', 'blue', 'plate', 'cube', 'table'}\n"
    "D = {'k': [1, 2.5, None], 't': (1, 2), 'nested': {'a': [np.float32(0.1)]}}\n"
    "A = np.arange(12, dtype=np.float32).reshape(3, 4) / 7\n"
    "def f(x, k=3):\n    return x * k + len(S)\n"
    "class Box:\n    def __init__(self, v):\n        self.v = v\n"
    "B = Box(D)\n"
    "def counter():\n    n = 0\n    while True:\n        n += 1\n        yield n\n"
    "G = counter(); next(G)\n"
    "r = robot.observe()\nH = r.value['handle']\nprint(H, len(S))",
    # request 2: change them, use the robot
    "S.add('bowl'); D['k'].append(f(2)); A[1] += 1; next(G)\n"
    "st = robot.get_robot_state()\nD['tcp'] = st.value\nprint(sorted(D))",
    # request 3: print everything, set iteration order included
    "print(list(S), D['k'], A.tobytes().hex()[:64], f(1), B.v is D, next(G), H, r.value['cameras'])",
    "print(next(G), len(D['tcp']))",
]


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("dp") / "ep"
    rec = record(out, "pick_place", 3, "fake", rng_seed=3)
    yield rec
    rec.backend.close()


def _compare(a: RecordedEpisode, b: RecordedEpisode) -> None:
    assert len(a.requests) == len(b.requests)
    for x, y in zip(a.requests, b.requests, strict=True):
        assert strip_timing(x) == strip_timing(y), f"request {x['t']} differs"

    def hidden(rec: RecordedEpisode) -> list[dict]:
        return [{k: v for k, v in s.to_dict().items() if k != "snapshot"} for s in rec.states]

    assert hidden(a) == hidden(b)  # s_1..s_T+1 (the snapshot handles name other stores)


def _resume(rec, t: int, out: Path, policy, **kw):
    rehydrate_policy(policy, rec.rec, t)
    res = restore_decision_point(rec.rec, t, rec.service, rec.task, out, **kw)
    run_episode(
        rec.task,
        rec.rec.seed,
        rec.service,
        policy,
        Budgets(**rec.rec.start["budgets"]),
        out,
        privileged=rec.source,
        observers=[rec.source],
        resume=res,
        clock=frozen_clock,
    )
    return RecordedEpisode.load(out)


@pytest.mark.parametrize("t", [1, 4, 7])
def test_restore_in_process_continues_bit_identically(scripted, tmp_path, t):
    again = _resume(scripted, t, tmp_path / f"t{t}", ScriptedPolicy(), source=scripted.source)
    _compare(scripted.rec, again)
    assert pickle.dumps(scripted.backend.snapshot()) == pickle.dumps(scripted.final)
    assert again.summary["outcome"] == scripted.rec.summary["outcome"] == "success_with_finish"


def test_rebuilt_robot_side_in_a_fresh_robot_continues_bit_identically(scripted, tmp_path):
    """What another process does: rebuild s_t from the record on a fresh robot of the scene."""
    task, backend, service = build_robot("pick_place", 3, "fake")
    try:
        point = rebuild_robot_side(scripted.rec, 5, service, task)
        res = restore_decision_point(scripted.rec, 5, service, task, tmp_path / "r", point=point)
        pol = ScriptedPolicy()
        rehydrate_policy(pol, scripted.rec, 5)
        run_episode(
            task,
            3,
            service,
            pol,
            Budgets(),
            tmp_path / "r",
            resume=res,
            privileged=DecisionPointSource(service),
            clock=frozen_clock,
        )
        _compare(scripted.rec, RecordedEpisode.load(tmp_path / "r"))
        assert pickle.dumps(backend.snapshot()) == pickle.dumps(scripted.final)
    finally:
        backend.close()


def test_the_resumed_folder_is_one_whole_episode(scripted, tmp_path):
    _resume(scripted, 3, tmp_path / "w", ScriptedPolicy(), source=scripted.source)
    start = json.loads((tmp_path / "w" / "trajectory.jsonl").read_text().splitlines()[0])
    assert start["resumed_from"] == {"folder": str(scripted.rec.folder), "t": 3}
    assert load_history(tmp_path / "w" / "trajectory.jsonl") == load_history(
        scripted.rec.folder / "trajectory.jsonl"
    )
    a, b = load_episode_record(tmp_path / "w"), load_episode_record(scripted.rec.folder)
    assert (a.return_R, a.costs, a.outcome) == (b.return_R, b.costs, b.outcome)
    assert all(
        (tmp_path / "w" / r.path).is_file()
        for r in load_history(tmp_path / "w" / "trajectory.jsonl").initial_images
    )


def test_session_variables_come_back_exactly(tmp_path):
    """Sets (hash-seed order), dicts, arrays, functions, classes, generators, robot results."""
    rec = record(tmp_path / "v", policy=replay_policy(VARIABLES))
    try:
        assert all(c.get("ns_digest") for r in rec.rec.requests for c in r["calls"])
        again = _resume(rec, 3, tmp_path / "v3", replay_policy(VARIABLES), source=rec.source)
        _compare(rec.rec, again)
        out = again.requests[2]["calls"][0]["output"]
        assert "'bowl'" in out and "True" in out
    finally:
        rec.backend.close()


def test_seeded_session_randomness_is_restored(tmp_path):
    cells = [
        "import random\nx = random.random(); y = np.random.rand(3)\nprint(x)",
        "print(random.random(), np.random.randint(1000), y)",
        "print(random.random())",
    ]
    rec = record(tmp_path / "s", policy=replay_policy(cells), rng_seed=11)
    try:
        assert check_restorable(rec.rec, 2).ok
        again = _resume(rec, 2, tmp_path / "s2", replay_policy(cells), source=rec.source)
        _compare(rec.rec, again)
    finally:
        rec.backend.close()


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import time\nT0 = time.time()", "wall clock"),
        ("from datetime import datetime\nnow = datetime.now()", "wall clock"),
        ("import random\nz = random.random()", "unseeded random"),
        ("z = np.random.rand(2)", "unseeded random"),
        ("g = np.random.default_rng()", "unseeded"),
        ("k = id(robot)", "identities"),
    ],
)
def test_cells_outside_the_seed_are_refused_with_the_reason(tmp_path, code, why):
    rec = record(tmp_path / "n", policy=replay_policy(["x = 1", code, "print(1)"]))
    try:
        assert check_restorable(rec.rec, 2).ok
        v = check_restorable(rec.rec, 3)
        assert not v.ok and why in v.reason and "request 2" in v.reason
        with pytest.raises(RestoreRefused, match=why):
            restore_decision_point(
                rec.rec, 3, rec.service, rec.task, tmp_path / "x", source=rec.source
            )
    finally:
        rec.backend.close()


def test_seeded_constructors_and_in_cell_seeds_are_accepted(tmp_path):
    cells = [
        "g = np.random.default_rng(5); a = g.random(2)",
        "import random\nrandom.seed(4)\nb = random.random()",
        "print(a, b)",
    ]
    rec = record(tmp_path / "k", policy=replay_policy(cells))
    try:
        assert check_restorable(rec.rec, 3).ok
        _compare(rec.rec, _resume(rec, 3, tmp_path / "k3", replay_policy(cells), source=rec.source))
    finally:
        rec.backend.close()


def test_a_tampered_record_is_refused_by_the_replay(tmp_path):
    rec = record(tmp_path / "t", policy=replay_policy(VARIABLES))
    try:
        path = rec.rec.folder / "trajectory.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        lines[2]["calls"][0]["robot_calls"][0]["result"]["value"]["arms"] = {"tampered": True}
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        with pytest.raises(RestoreRefused, match="variable digest|differs"):
            restore_decision_point(
                path.parent, 3, rec.service, rec.task, tmp_path / "x", source=rec.source
            )
    finally:
        rec.backend.close()


def test_a_policy_that_does_not_reproduce_its_prefix_is_refused(scripted):
    other = ReplayPolicy([{"code": "print('something else')"}])
    with pytest.raises(RestoreRefused, match="does not reproduce its recorded reply"):
        rehydrate_policy(other, scripted.rec, 3)


def test_refusals_range_stale_robot_and_timeouts(scripted, tmp_path):
    assert "outside" in check_restorable(scripted.rec, 0).reason
    assert "outside" in check_restorable(scripted.rec, scripted.rec.n_requests + 1).reason
    # the in-memory snapshots were dropped and the robot is not fresh: no silent rebuild
    with pytest.raises(RestoreRefused, match="needs a robot at the start"):
        restore_decision_point(scripted.rec, 2, scripted.service, scripted.task, tmp_path / "s")
    rec = record(
        tmp_path / "to",
        policy=replay_policy(["while True:\n    pass", "print(2)"]),
        session_config=SessionConfig(cell_timeout_s=1.0, interrupt_grace_s=0.5),
    )
    try:
        assert "timed out" in check_restorable(rec.rec, 2).reason
    finally:
        rec.backend.close()


def test_sessions_without_a_fixed_hash_seed_are_refused(tmp_path):
    rec = record(
        tmp_path / "h",
        policy=replay_policy(["x = {'a', 'b'}", "print(x)"]),
        session_config=SessionConfig(hash_seed=None),
    )
    try:
        assert "hash seed" in check_restorable(rec.rec, 2).reason
    finally:
        rec.backend.close()


def test_digest_sees_hidden_state_that_output_does_not(tmp_path):
    """Two sessions printing the same thing but holding different variables differ in digest."""
    a = record(tmp_path / "a", policy=replay_policy(["v = [1, 2, 3]\nprint('ok')"]))
    b = record(tmp_path / "b", policy=replay_policy(["v = [1, 2, 4]\nprint('ok')"]))
    try:
        ca, cb = a.rec.requests[0]["calls"][0], b.rec.requests[0]["calls"][0]
        assert ca["output"] == cb["output"] and ca["ns_digest"] != cb["ns_digest"]
    finally:
        a.backend.close()
        b.backend.close()


def test_mujoco_episode_restored_in_a_fresh_backend_is_bit_identical(tmp_path):
    """Real MuJoCo, the scripted expert: rebuild s_t on a fresh backend, continue, compare the
    trajectory and the final physics bit for bit; another scene's backend is refused."""
    rec = record(tmp_path / "m", "pick_place", 3, "mujoco", rng_seed=3)
    try:
        task, backend, service = build_robot("pick_place", 3, "mujoco")
        try:
            point = rebuild_robot_side(rec.rec, 4, service, task)
            res = restore_decision_point(rec.rec, 4, service, task, tmp_path / "m4", point=point)
            pol = ScriptedPolicy()
            rehydrate_policy(pol, rec.rec, 4)
            run_episode(
                task,
                3,
                service,
                pol,
                Budgets(),
                tmp_path / "m4",
                resume=res,
                privileged=DecisionPointSource(service),
                clock=frozen_clock,
            )
            _compare(rec.rec, RecordedEpisode.load(tmp_path / "m4"))
            assert backend.snapshot().physics.tobytes() == rec.final.physics.tobytes()
        finally:
            backend.close()
        task2, other, service2 = build_robot("pick_place", 4, "mujoco")
        try:
            with pytest.raises(RestoreRefused, match="model key"):
                rebuild_robot_side(rec.rec, 2, service2, task2)
        finally:
            other.close()
        assert np.isfinite(rec.record.wall_s)
    finally:
        rec.backend.close()
