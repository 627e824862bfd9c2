"""Prompt profiles: the compact profile says the same API in fewer tokens, is recorded in the
episode and its dataset rows, and a student runs with the profile it was trained with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from captain_ros.api import registry
from captain_ros.cli.main import main
from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.episode.profiles import get_profile, resolve_profile
from captain_ros.harness.episode.taskmd import render_task_md
from captain_ros.learn.data import build_dataset
from captain_ros.learn.errors import DatasetError
from captain_ros.tasks import get_task


def test_compact_task_md_is_short_and_complete() -> None:
    task = get_task("pick_place")
    full = render_task_md(task, 3, Budgets())
    compact = render_task_md(task, 3, Budgets(), compact_api=True)
    assert len(compact) < 0.5 * len(full)
    assert all(f"`{c.name}(" in compact for c in registry.CAPABILITIES)  # the same capabilities
    assert task.instruction(3) in compact


def test_profiles_by_name() -> None:
    assert get_profile("compact").context.context_limit_tokens == 8192
    assert get_profile("default").context == type(get_profile("default").context)()
    with pytest.raises(UnknownNameError, match="compact"):
        get_profile("tiny")


def test_a_student_runs_with_the_profile_it_was_trained_with(tmp_path: Path) -> None:
    (tmp_path / "sft_config.json").write_text(json.dumps({"profile": "compact"}))
    assert resolve_profile(None, tmp_path) == "compact"
    assert resolve_profile("auto", tmp_path) == "compact"
    assert resolve_profile("compact", tmp_path) == "compact"
    with pytest.raises(InvalidArgumentError, match="trained with the 'compact'"):
        resolve_profile("default", tmp_path)
    assert resolve_profile(None, None) == "default"
    assert resolve_profile("compact", tmp_path / "base_model") == "compact"


def test_the_cli_refuses_a_mismatched_profile_before_loading_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "sft_config.json").write_text(json.dumps({"profile": "compact"}))
    code = main(
        [
            "run",
            "--task",
            "pick_place",
            "--seed",
            "3",
            "--policy",
            "transformers",
            "--model-folder",
            str(tmp_path / "student"),
            "--profile",
            "default",
            "--out",
            str(tmp_path / "ep"),
            "--no-bag",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "trained with the 'compact' prompt profile" in err[0]


def test_the_profile_is_recorded_and_datasets_do_not_mix_them(tmp_path: Path) -> None:
    for profile in ("compact", "default"):
        assert (
            main(
                [
                    "run",
                    "--task",
                    "pick_place",
                    "--seed",
                    "12",
                    "--backend",
                    "fake",
                    "--profile",
                    profile,
                    "--out",
                    str(tmp_path / profile),
                    "--no-bag",
                    "--json",
                ]
            )
            == 0
        )
    start = json.loads((tmp_path / "compact" / "trajectory.jsonl").read_text().splitlines()[0])
    assert start["profile"] == "compact" and start["system"] == get_profile("compact").system_prompt
    assert start["context"]["context_limit_tokens"] == 8192
    report = build_dataset([tmp_path / "compact"], tmp_path / "d", outcomes="all")
    rows = [
        json.loads(x)
        for x in (tmp_path / "d" / "train.jsonl").read_text().splitlines()
        + (tmp_path / "d" / "validation.jsonl").read_text().splitlines()
    ]
    assert report.profile == "compact" and {r["profile"] for r in rows} == {"compact"}
    with pytest.raises(DatasetError, match="mix prompt profiles"):
        build_dataset([tmp_path / "compact", tmp_path / "default"], tmp_path / "e", outcomes="all")
