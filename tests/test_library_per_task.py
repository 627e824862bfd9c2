"""The helper index per task (``entry_points(task)``, ``library_index(task)``): the helpers the
expert's plans for that task reach, read from the plans' source; a real episode under the
``helpers`` profile calls nothing outside its task's index."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from captain_ros.core.errors import UnknownNameError
from captain_ros.policy.expert.library import (
    ALWAYS,
    LIBRARY_HEADING,
    entry_points,
    library_index,
    task_helpers,
)
from captain_ros.policy.expert.plans import PLANS
from captain_ros.policy.expert.source import registered


def test_each_task_lists_its_own_helpers_only() -> None:
    every = set(registered())
    for task in PLANS:
        helpers, points = task_helpers(task), entry_points(task)
        assert set(helpers) <= every and set(ALWAYS) <= set(points) <= set(helpers), task
        index = library_index(task)
        assert index.startswith(LIBRARY_HEADING) and len(index) < len(library_index())
    door, pot = set(entry_points("robosuite_door")), set(entry_points("robosuite_two_arm_lift"))
    assert {"grasp_lever", "turn_lever", "pull_door"} <= door and not door & {"grab_handles"}
    assert "grab_handles" in pot and not pot & {"turn_lever", "grasp_handle"}
    pick = set(entry_points("pick_place"))
    assert {"perceive", "descend", "close_lift", "place"} <= pick
    assert not pick & {"turn_lever", "nut_and_peg", "grab_handles", "check_handle"}
    assert "check_handle" in entry_points("open_drawer")  # reached through the plan's class
    with pytest.raises(UnknownNameError):
        task_helpers("nosuch")


@pytest.mark.parametrize("task", ["pick_place", "restack"])
def test_a_helpers_episode_calls_only_its_tasks_index(task: str, tmp_path: Path) -> None:
    from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.episode import run_one

    out = tmp_path / task
    rec = run_one(
        EpisodeConfig(
            task,
            3,
            str(out),
            backend=BackendConfig("fake"),
            recording=RecordingConfig(bag=False, report=False),
            profile="helpers",
        )
    )
    assert rec.strict_success, rec.outcome
    codes = []
    for line in (out / "trajectory.jsonl").read_text().splitlines():
        row = json.loads(line)
        codes += [c["code"] for c in row.get("calls") or [] if "code" in c]
    called = {m for c in codes for m in re.findall(r"(\w+)\(S\b", c)} | {"State"}
    assert len(called) > 3 and called <= set(entry_points(task)), called - set(entry_points(task))
    start = json.loads((out / "trajectory.jsonl").read_text().splitlines()[0])
    assert LIBRARY_HEADING in start["task_md"]
