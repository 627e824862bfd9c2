"""``captain learn sft`` on bad input: one clear line on stderr, exit status 2, nothing written
that could be mistaken for a student; ``--debug`` shows the traceback instead."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("trl")

from sft_fixtures import episode_history, make_row, save_tiny, write_rows  # noqa: E402

from captain_ros.cli.main import main  # noqa: E402
from captain_ros.learn.rows import DatasetError  # noqa: E402

pytestmark = pytest.mark.learn


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("base"))


def _sft(capsys, *args):
    code = main(["learn", "sft", "--no-progress", *args])
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def test_dataset_folder_without_rows(tmp_path, base, capsys):
    (tmp_path / "data").mkdir()
    code, err = _sft(
        capsys,
        "--data",
        str(tmp_path / "data"),
        "--base",
        str(base),
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2 and len(err) == 1
    assert err[0].startswith("captain learn sft: error: ") and "no *.jsonl files" in err[0]
    assert not (tmp_path / "out" / "config.json").exists()


def test_row_with_the_wrong_schema_names_file_and_line(tmp_path, base, capsys):
    good, bad = make_row(episode_history(2)), make_row(episode_history(2))
    bad["weights"] = [1.0]
    write_rows(tmp_path / "data", [good, bad])
    code, err = _sft(
        capsys,
        "--data",
        str(tmp_path / "data"),
        "--base",
        str(base),
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2 and len(err) == 1
    assert "train.jsonl:2: 'weights' must be a list with one entry per assistant message" in err[0]


def test_unknown_base(tmp_path, capsys):
    write_rows(tmp_path / "data", [make_row(episode_history(1))])
    code, err = _sft(
        capsys,
        "--data",
        str(tmp_path / "data"),
        "--base",
        "smollm9",
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2 and err == [
        "captain learn sft: error: unknown base 'smollm9': not one of smollm2 and no such folder"
    ]
    code, err = _sft(
        capsys,
        "--data",
        str(tmp_path / "data"),
        "--base",
        str(tmp_path),
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2 and "is not a transformers model folder (no config.json)" in err[0]


def test_only_masked_turns_and_bad_options(tmp_path, base, capsys):
    write_rows(tmp_path / "data", [make_row(episode_history(2), [0.0, 0.0])])
    code, err = _sft(
        capsys,
        "--data",
        str(tmp_path / "data"),
        "--base",
        str(base),
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2 and "no supervised tokens" in err[0]
    code, err = _sft(
        capsys,
        "--data",
        str(tmp_path / "data"),
        "--base",
        str(base),
        "--out",
        str(tmp_path / "out"),
        "--grad-accum",
        "0",
    )
    assert code == 2 and err == ["captain learn sft: error: grad_accum must be >= 1, got 0"]


def test_debug_shows_the_traceback(tmp_path, base):
    (tmp_path / "data").mkdir()
    with pytest.raises(DatasetError):
        main(
            [
                "learn",
                "sft",
                "--debug",
                "--data",
                str(tmp_path / "data"),
                "--base",
                str(base),
                "--out",
                str(tmp_path / "out"),
            ]
        )


def test_a_training_run_prints_one_summary_line(tmp_path, base, capsys):
    write_rows(tmp_path / "data", [make_row(episode_history(2))])
    code = main(
        [
            "learn",
            "sft",
            "--no-progress",
            "--data",
            str(tmp_path / "data"),
            "--base",
            str(base),
            "--out",
            str(tmp_path / "out"),
            "--max-steps",
            "2",
            "--bf16",
            "off",
            "--val-fraction",
            "0",
        ]
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and out[-1].startswith("trained 2 steps in ")
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["steps"] == 2


def test_threads_named_or_inherited_and_a_starved_run_says_so(tmp_path, base, capsys, monkeypatch):
    """An ``OMP_NUM_THREADS=1`` inherited from an evaluation's environment once halved a CPU
    continuation (issue 30): the run reports the threads it computed on and, when the variable
    left cores idle, says so in one line; ``--threads`` overrides it, and is taken as meant."""
    import torch

    from captain_ros.learn.threads import thread_note

    write_rows(tmp_path / "data", [make_row(episode_history(2))])
    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    torch.set_num_threads(1)  # what torch takes from OMP_NUM_THREADS=1 at start-up
    common = ["--data", str(tmp_path / "data"), "--base", str(base), "--max-steps", "1"]
    common += ["--val-fraction", "0"]

    def ours(err: list[str]) -> list[str]:
        return [line for line in err if line.startswith("captain learn sft")]

    try:
        code, err = _sft(capsys, *common, "--out", str(tmp_path / "a"))
        metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
        assert code == 0 and metrics["threads"] == 1
        assert ours(err) == [
            "captain learn sft: note: training on 1 of 4 CPU cores (OMP_NUM_THREADS=1); "
            "--threads 4 uses them all"
        ]
        code, err = _sft(capsys, *common, "--out", str(tmp_path / "b"), "--threads", "2")
        metrics = json.loads((tmp_path / "b" / "metrics.json").read_text())
        assert code == 0 and metrics["threads"] == 2 and torch.get_num_threads() == 2
        assert ours(err) == []
        code, err = _sft(capsys, *common, "--out", str(tmp_path / "c"), "--threads", "0")
        assert code == 2 and err == ["captain learn sft: error: threads must be >= 1, got 0"]
    finally:
        torch.set_num_threads(before)
    omp = {"OMP_NUM_THREADS": "1"}
    assert thread_note("p", 4, "cpu", 1, 4, omp) is None  # every core
    assert thread_note("p", 1, "cpu", 1, 4, {}) is None  # torch's own choice (physical cores)
    assert thread_note("p", 1, "cpu", 2, 4, omp) is None  # torchrun: each process its share
    assert thread_note("p", 1, "cuda", 1, 4, omp) is None
