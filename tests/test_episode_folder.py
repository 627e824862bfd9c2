"""The episode-folder contract: file names spelled once, readers that name the file and the line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from captain_ros.core import episode_folder as ef
from captain_ros.core.episode_folder import EpisodeFiles, read_jsonl, read_jsonl_lenient
from captain_ros.core.errors import InvalidArgumentError, RecordError
from captain_ros.harness.record.privileged_log import load_episode_record
from captain_ros.learn import errors as learn_errors
from captain_ros.learn.episodes import default_loader
from captain_ros.report.record import EpisodeFolder

PACKAGE = Path(__file__).resolve().parents[1] / "captain_ros"


def test_the_file_names_are_spelled_in_one_module() -> None:
    names = [ef.SUMMARY, ef.TRAJECTORY, ef.PRIVILEGED, ef.TASK_MD, ef.REPORT]
    spelled = re.compile("|".join(re.escape(json.dumps(n)) for n in names))
    found = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if spelled.search(p.read_text(encoding="utf-8"))
    )
    assert found == ["core/episode_folder.py"]


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
    assert read_jsonl_lenient(path) == [{"type": "episode_start"}]  # display: a cut last line
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
