"""The ``helpers`` prompt profile: the expert's session functions are defined before the first
request (a session prelude, run again after a restart), TASK.md indexes them, the expert then
writes call lines only, the record holds the prelude, and a decision point of such an episode
restores bit-identically."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "re0"))
from re0_helpers import frozen_clock, record, strip_timing  # noqa: E402

from captain_ros.harness.episode import EpisodeOptions, run_episode  # noqa: E402
from captain_ros.harness.episode.budgets import Budgets  # noqa: E402
from captain_ros.harness.episode.profiles import get_profile, library_prelude  # noqa: E402
from captain_ros.harness.episode.taskmd import render_task_md  # noqa: E402
from captain_ros.harness.sandbox.session import PythonSession, SessionConfig  # noqa: E402
from captain_ros.policy.expert import ScriptedExpert  # noqa: E402
from captain_ros.policy.expert.library import (  # noqa: E402
    LIBRARY_HEADING,
    entry_points,
    library_index,
    library_source,
)
from captain_ros.policy.expert.source import registered  # noqa: E402
from captain_ros.policy.scripted import ScriptedPolicy, library_in  # noqa: E402
from captain_ros.research.re0.decision_points import (  # noqa: E402
    RecordedEpisode,
    rehydrate_policy,
    restore_decision_point,
)
from captain_ros.tasks import get_task  # noqa: E402


class _NoRobot:
    def on_call(self, name, kwargs):
        raise AssertionError(f"no robot call expected, got {name}")

    def on_image(self, handle, camera):
        return ""


def test_the_index_lists_every_entry_point_and_nothing_else() -> None:
    index = library_index()
    assert index.startswith(LIBRARY_HEADING)
    listed = [
        line.split("`")[1].split("(")[0] for line in index.splitlines() if line.startswith("- `")
    ]
    assert listed == list(entry_points())
    assert {"descend", "place", "verify", "finish", "State", "start"} <= set(listed)
    # what a small student pays for it, once per episode (the robosuite plans' helpers took it
    # from ~3.9k to 4.2k characters, Door and NutAssemblySquare to 5.6k: every task lists every
    # plan's entry points). library_index(task) lists one task's (0.7-1.9k); the profiles switch
    # to it with the next trained student, which must see the same TASK.md it is deployed with.
    assert len(index) < 5700


def test_helpers_task_md_and_profile() -> None:
    p = get_profile("helpers")
    assert p.library and p.compact_api and p.context == get_profile("compact").context
    assert library_prelude(get_profile("compact")) == ""
    md = render_task_md(get_task("pick_place"), 3, Budgets(), True, library_index())
    assert md.startswith(render_task_md(get_task("pick_place"), 3, Budgets(), True).rstrip())
    assert library_in([{"role": "system", "content": "x"}, {"role": "user", "content": md}])
    assert not library_in(
        [
            {"role": "user", "content": "TASK"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": LIBRARY_HEADING},
        ]
    )  # only TASK.md counts


def test_the_prelude_defines_the_library_and_comes_back_after_a_restart(tmp_path: Path) -> None:
    cfg = SessionConfig(cell_timeout_s=5.0, prelude=library_source())
    with PythonSession(tmp_path / "ws", cfg) as s:
        names = list(registered())
        out = s.run_cell(f"print(sorted(n for n in {names!r} if n not in globals()))", _NoRobot())
        assert out.text().strip() == "[]"
        s.run_cell("v = 1", _NoRobot())
        os.kill(s.pid, signal.SIGKILL)
        time.sleep(0.1)
        again = s.run_cell("print(callable(descend), 'v' in globals())", _NoRobot())
        assert "session restarted" in again.notice and again.output.strip() == "True False"


def test_a_failing_prelude_makes_the_start_fail_clearly(tmp_path: Path) -> None:
    s = PythonSession(tmp_path / "ws", SessionConfig(prelude="raise ValueError('bad prelude')"))
    with pytest.raises(RuntimeError, match="failed to start"):
        s.start()
    s.close()


def test_the_expert_sends_call_lines_only_and_sets_up_again_after_a_restart() -> None:
    ex = ScriptedExpert("pick_place", "Put the red cube on the plate.", preloaded=True)
    first = ex.next_cell(None)
    assert first is not None and "def " not in first.code and "class " not in first.code
    assert "S = State(robot, 1)" in first.code
    second = ex.next_cell(
        'NOTE {"ready": true, "poses": {"arm": [[0.23, 0, 0.12], [0, 0, -1, 0]]}}'
    )
    assert second is not None and second.code.startswith("note(**perceive(S")
    probe = ex.next_cell("Traceback ... [session restarted]")  # no note: the expert probes
    assert probe is not None and "epoch" in probe.code
    resetup = ex.next_cell('NOTE {"epoch": null}')  # the variables are lost
    assert (
        resetup is not None and "S = State(robot, 2)" in resetup.code and "def " not in resetup.code
    )
    take = ScriptedExpert.takeover("pick_place", "Put the red cube on the plate.")
    assert not take.preloaded  # a takeover defines its own helpers (the student may rebind them)


@pytest.fixture(scope="module")
def episode(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("helpers") / "ep"
    rec = record(out, "pick_place", 3, "fake", rng_seed=3, profile="helpers")
    yield rec
    rec.backend.close()


def test_a_helpers_episode_succeeds_with_short_cells_and_records_its_prelude(episode) -> None:
    rec = episode.rec
    assert rec.summary["outcome"] == "success_with_finish"
    assert rec.start["profile"] == "helpers" and rec.start["session"]["prelude"] == library_source()
    assert LIBRARY_HEADING in rec.start["task_md"]
    codes = [c["code"] for r in rec.requests for c in r.get("calls") or []]
    assert codes and all("def " not in c for c in codes)
    assert sum(map(len, codes)) < 1000  # call lines, not the helpers' 27 kB of source
    called = {m for c in codes for m in re.findall(r"(\w+)\(S\b", c)} | {"State"}
    assert called <= set(entry_points())  # TASK.md lists every helper the expert calls


def test_a_helpers_episode_restores_bit_identically(episode, tmp_path: Path) -> None:
    rec, t = episode.rec, 4
    assert all(r.get("context_sha256") for r in rec.requests)  # compared request by request
    pol = ScriptedPolicy()
    rehydrate_policy(pol, rec, t)
    res = restore_decision_point(
        rec, t, episode.service, episode.task, tmp_path / "r", source=episode.source
    )
    run_episode(
        episode.task,
        rec.seed,
        episode.service,
        pol,
        Budgets(**rec.start["budgets"]),
        tmp_path / "r",
        privileged=episode.source,  # no profile given: the continuation renders as its record
        observers=[episode.source],
        resume=res,
        clock=frozen_clock,
    )
    again = RecordedEpisode.load(tmp_path / "r")
    assert [strip_timing(x) for x in again.requests] == [strip_timing(x) for x in rec.requests]
    assert (
        json.loads((tmp_path / "r" / "trajectory.jsonl").read_text().splitlines()[0])["session"][
            "prelude"
        ]
        == library_source()
    )


def test_a_reused_session_without_the_library_is_refused(tmp_path: Path) -> None:
    from captain_ros.core.errors import InvalidArgumentError
    from captain_ros.evaluation.episode import build_robot

    task, backend, service = build_robot("pick_place", 3, "fake")
    try:
        with (
            PythonSession(tmp_path / "ws") as s,
            pytest.raises(InvalidArgumentError, match="helper library"),
        ):
            run_episode(
                task,
                3,
                service,
                ScriptedPolicy(),
                Budgets(),
                tmp_path / "ep",
                options=EpisodeOptions(profile="helpers"),
                session=s,
            )
    finally:
        backend.close()
