"""The episode-folder contract: file names spelled once, readers that name the file and the line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from captain_ros.core import episode_folder as ef
from captain_ros.core.episode_folder import (
    EpisodeFiles,
    Trajectory,
    read_jsonl,
    read_jsonl_numbered,
)
from captain_ros.core.errors import InvalidArgumentError, RecordError
from captain_ros.harness.record.privileged_log import load_episode_record, read_privileged
from captain_ros.harness.record.recorded import RecordedEpisode
from captain_ros.harness.record.robot_state import RestoreRefused
from captain_ros.learn import errors as learn_errors
from captain_ros.learn.episodes import default_loader
from captain_ros.report.record import EpisodeFolder

PACKAGE = Path(__file__).resolve().parents[1] / "captain_ros"


ROOT = PACKAGE.parent
SPELLED_IN = (PACKAGE, ROOT / "benchmarks", ROOT / "scripts")


def spellings(text: str) -> list[str]:
    """Episode file names written as a string of their own or as a path's last part (``"*/summary.json"``,
    ``f"{d}/trajectory.jsonl"``); prose that names them (docstrings, messages) has spaces around them."""
    names = "|".join(re.escape(n) for n in ef.FILE_NAMES)
    return [m.group(0) for m in re.finditer(rf"([\"'])(?:[^\"'\s]*/)?(?:{names})\1", text)]


def test_the_file_names_are_spelled_in_one_module() -> None:
    found = sorted(
        str(p.relative_to(ROOT))
        for top in SPELLED_IN
        for p in top.rglob("*.py")
        if spellings(p.read_text(encoding="utf-8"))
    )
    assert found == ["captain_ros/core/episode_folder.py"]
    assert ef.FILE_NAMES == (
        "summary.json",
        "trajectory.jsonl",
        "privileged.jsonl",
        "TASK.md",
        "report.html",
        "session.log",
        "rollout.json",
    )


def test_the_spelling_check_sees_paths_and_globs_but_not_prose() -> None:
    assert spellings('p.glob("*/summary.json")') == ['"*/summary.json"']
    assert spellings('Path(f"{tmp}/trajectory.jsonl")') == ['"{tmp}/trajectory.jsonl"']
    assert spellings("x / 'rollout.json'") == ["'rollout.json'"]
    assert spellings('raise E(f"{p}: no summary.json here")') == []
    assert spellings("x / 'trajectory.json'") == [] and spellings('"""TASK.md\'s index"""') == []


def test_one_record_error() -> None:
    assert learn_errors.RecordError is RecordError
    assert issubclass(RecordError, InvalidArgumentError)  # the CLIs' one line and exit 2
    assert default_loader() is load_episode_record  # imported, not probed by name


def test_paths_and_readers_of_a_folder(tmp_path: Path) -> None:
    files = EpisodeFiles.of(tmp_path)
    assert files.summary == tmp_path / "summary.json"
    assert files.trajectory == tmp_path / "trajectory.jsonl"
    assert files.privileged == tmp_path / "privileged.jsonl"
    assert (files.task_md.name, files.report.name) == ("TASK.md", "report.html")
    assert not files.is_episode() and not files.has_summary()
    with pytest.raises(RecordError, match="summary.json: missing"):
        files.read_summary()
    assert files.read_summary_or_empty() == {}
    files.trajectory.write_text('{"type": "episode_start"}\n\n{"type": "request", "t": 1}\n')
    files.summary.write_text(json.dumps({"task": "pick_place", "seed": 3}))
    assert files.is_episode() and files.has_summary()
    assert [r["type"] for r in files.read_trajectory()] == ["episode_start", "request"]
    assert files.read_summary()["seed"] == 3


def test_malformed_files_are_named_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    path.write_text('{"type": "episode_start"}\n{"type": "requ\n')
    with pytest.raises(RecordError, match=r"trajectory.jsonl:2: not JSON"):
        read_jsonl(path)
    assert read_jsonl(path, lenient=True) == [{"type": "episode_start"}]  # display: a cut last line
    path.write_text("[1, 2]\n")
    with pytest.raises(RecordError, match=r"trajectory.jsonl:1: holds a list"):
        read_jsonl(path)
    (tmp_path / "summary.json").write_text("[]")
    with pytest.raises(RecordError, match="summary.json: holds a list"):
        EpisodeFiles(tmp_path).read_summary()
    assert EpisodeFiles(tmp_path).read_summary_or_empty() == {}


def test_the_report_reads_a_folder_through_the_contract(tmp_path: Path) -> None:
    files = EpisodeFiles(tmp_path)
    files.trajectory.write_text(
        '{"type": "episode_start", "task_md": "# T"}\n{"type": "request", "t": 1}\ncut'
    )
    files.summary.write_bytes(b'{"task": "stack", "note": "\xff"}')  # a byte that is not UTF-8
    folder = EpisodeFolder.load(tmp_path)
    assert folder.start["task_md"] == "# T" and len(folder.requests) == 1
    assert folder.summary["task"] == "stack"


def test_a_folder_without_a_summary_is_one_record_error(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="summary.json: missing"):
        load_episode_record(tmp_path)


def test_one_jsonl_reader_names_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    path.write_text('{"type": "episode_start"}\n\n{"type": "request", "t": 1}\n{"type": "req')
    with pytest.raises(RecordError, match=r"trajectory.jsonl:4: not JSON .*the last line is torn"):
        read_jsonl(path)
    assert [n for n, _ in read_jsonl_numbered(path, lenient=True)] == [1, 3]  # blank line 2 skipped
    path.write_text('{"type": "episode_start"}\n{"type": "req\n{"type": "request", "t": 1}\n')
    with pytest.raises(RecordError, match=r"trajectory.jsonl:2: not JSON") as err:
        read_jsonl(path)
    # a bad line that its writer ended is corruption, not a torn tail
    assert "torn" not in str(err.value)
    assert len(read_jsonl(path, lenient=True)) == 2
    path.write_bytes(b'{"type": "episode_start", "x": "\xff"}\n')
    with pytest.raises(RecordError, match="trajectory.jsonl: not readable"):
        read_jsonl(path)
    assert read_jsonl(path, lenient=True)[0]["x"] == "\ufffd"
    with pytest.raises(RecordError, match="nothing.jsonl: missing"):
        read_jsonl(tmp_path / "nothing.jsonl")
    assert read_jsonl(tmp_path / "nothing.jsonl", lenient=True) == []


def test_trajectory_lines_by_type() -> None:
    recs: list[dict[str, Any]] = [
        {"type": "episode_start", "k": 1},
        {"type": "request", "t": 1},
        {"type": "notice"},
        {"type": "request", "t": 2},
        {"type": "episode_end", "summary": {"task": "stack"}},
    ]
    lines = Trajectory.split(recs)
    assert lines.start == {"type": "episode_start", "k": 1}
    assert [r["t"] for r in lines.requests] == [1, 2]
    assert lines.end is not None and lines.end["summary"] == {"task": "stack"}
    empty = Trajectory.split([])
    assert (empty.start, empty.requests, empty.end) == (None, (), None)


def _state(t: int) -> dict[str, Any]:
    return {
        "type": "state",
        "t": t,
        "features": [0.0] * 36,
        "milestones": [False],
        "goals_satisfied": [False],
        "held": False,
        "ever_held": False,
        "solved": t == 3,
        "snapshot": None,
        "time_s": 0.1 * t,
    }


def _request(t: int) -> dict[str, Any]:
    return {
        "type": "request",
        "t": t,
        "physical_actions": 1,
        "failed_physical": 0,
        "python_error_only": False,
        "perception_only": False,
        "capabilities": ["move_to"],
        "cost": 0.0,
    }


def _finished_folder(root: Path, *, terminal: bool = True) -> EpisodeFiles:
    files = EpisodeFiles(root)
    root.mkdir(parents=True, exist_ok=True)
    start = {
        "type": "episode_start",
        "task": "pick_place",
        "seed": 7,
        "system": "S",
        "task_md": "# T",
        "initial_images": [],
    }
    reqs: list[dict[str, Any]] = [
        {"type": "request", "t": t, "reasoning": "", "calls": [], "notice": ""} for t in (1, 2)
    ]
    files.trajectory.write_text("".join(json.dumps(r) + "\n" for r in [start, *reqs]))
    files.summary.write_text(
        json.dumps(
            {
                "task": "pick_place",
                "seed": 7,
                "policy": "scripted",
                "backend": "mujoco",
                "outcome": "success_with_finish",
                "host_success": True,
                "strict_success": True,
            }
        )
    )
    priv = [_state(1), _request(1), _state(2), _request(2), _state(3)]
    if terminal:
        priv.append({"type": "terminal", "return_R": 1.0, "costs": [-0.01, -0.02]})
    files.privileged.write_text("".join(json.dumps(r) + "\n" for r in priv))
    return files


def test_the_privileged_lines_have_one_parser_for_learning_and_re0(tmp_path: Path) -> None:
    files = _finished_folder(tmp_path / "ep")
    lines = read_privileged(files)
    assert [s.t for s in lines.states] == [1, 2, 3] and [r.t for r in lines.requests] == [1, 2]
    assert lines.terminal is not None and lines.terminal["return_R"] == 1.0
    learning = load_episode_record(files.root)
    restore = RecordedEpisode.load(files.root)
    assert (
        [s.to_dict() for s in learning.states]
        == [s.to_dict() for s in restore.states]
        == [_state(t) for t in (1, 2, 3)]
    )
    assert [r.cost for r in learning.requests] == [-0.01, -0.02]  # the terminal line's costs
    assert restore.privileged_requests == lines.requests and restore.n_requests == 2
    assert (restore.task, restore.seed, learning.group) == ("pick_place", 7, "pick_place:7")

    with files.privileged.open("a") as f:
        f.write('{"type": "mystery"}\n')
    with pytest.raises(RecordError, match=r"privileged.jsonl:7: unknown line type 'mystery'"):
        load_episode_record(files.root)
    with pytest.raises(RestoreRefused, match=r"privileged.jsonl:7: unknown line type 'mystery'"):
        RecordedEpisode.load(files.root)


def test_what_each_view_asks_of_an_unfinished_or_bare_folder(tmp_path: Path) -> None:
    files = _finished_folder(tmp_path / "ep", terminal=False)
    with pytest.raises(RecordError, match="no terminal line"):
        load_episode_record(files.root)  # learning: only finished episodes
    assert RecordedEpisode.load(files.root).n_requests == 2  # RE-0 restores from the states alone
    files.privileged.unlink()
    with pytest.raises(RecordError, match="privileged.jsonl: missing"):
        load_episode_record(files.root)
    assert RecordedEpisode.load(files.root).states == ()  # hardware: no hidden state
    assert read_privileged(files, missing_ok=True).terminal is None
    files.summary.write_text("{")
    with pytest.raises(RecordError, match=r"summary.json: not readable as JSON \(.*\)$"):
        load_episode_record(files.root)


def test_episodes_below_a_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for task, seed in [("stack", 1), ("pick_place", 2)]:
        files = EpisodeFiles(run / task / f"seed_{seed}")
        files.bag.mkdir(parents=True)
        (files.bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
        files.trajectory.write_text('{"type": "episode_start"}\n')
    unclosed = run / "bags" / "goal_1"  # a recorder's bag it never closed: MCAP files only
    unclosed.mkdir(parents=True)
    (unclosed / "goal_1_0.mcap").write_bytes(b"")
    hidden = EpisodeFiles(run / ".trash" / "old")
    hidden.root.mkdir(parents=True)
    hidden.trajectory.write_text("{}\n")
    deep = EpisodeFiles(run / "a" / "b" / "c" / "d")
    deep.root.mkdir(parents=True)
    deep.trajectory.write_text("{}\n")
    # each episode folder once (its own bag/ is its bag), the unclosed bag, no hidden or too deep one
    assert ef.episodes_below(run) == [
        run / "bags" / "goal_1",
        run / "pick_place" / "seed_2",
        run / "stack" / "seed_1",
    ]
    assert ef.episodes_below(run / "stack" / "seed_1") == [run / "stack" / "seed_1"]
    assert ef.episodes_below(run, max_depth=4)[0] == deep.root
    assert (
        ef.episodes_below(tmp_path / "nothing") == [] and ef.episodes_below(hidden.trajectory) == []
    )


def test_an_evaluation_folder_of_episode_folders_reads_each_summary(tmp_path: Path) -> None:
    from captain_ros.evaluation.summary import load_episodes

    for seed in (3, 4):
        _finished_folder(tmp_path / "run" / f"seed_{seed}")
    records = load_episodes(tmp_path / "run")
    assert [(r.task, r.outcome) for r in records] == [("pick_place", "success_with_finish")] * 2
    (tmp_path / "run" / "seed_4" / "summary.json").write_text("[]")
    with pytest.raises(RecordError, match=r"seed_4/summary.json: holds a list"):
        load_episodes(tmp_path / "run")
    with pytest.raises(InvalidArgumentError, match="holds no episodes"):
        load_episodes(tmp_path / "run" / "seed_3")
