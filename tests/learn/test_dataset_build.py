"""`captain learn dataset` on real recorded episodes: rows hold exactly what the policy saw (the
recorded context hashes), a bag gives the same rows as its episode folder, the SFT loader reads
them, weights/mask/split/dedupe follow their rules, and bad inputs get one line and exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from captain_ros.cli.main import main
from captain_ros.harness.record.trajectory import messages_sha256
from captain_ros.learn.data import build_dataset
from captain_ros.learn.data.build import split_of
from captain_ros.learn.data.rows import MASK, has_coordinates, mask_turn, turn_weights
from captain_ros.learn.errors import DatasetError
from captain_ros.learn.rows import load_rows


@pytest.fixture(scope="module")
def episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scripted-expert episode (MuJoCo) with its in-process bag."""
    out = tmp_path_factory.mktemp("ds") / "pick_place_12"
    assert main(["run", "--task", "pick_place", "--seed", "12", "--out", str(out), "--json"]) == 0
    assert (out / "bag" / "metadata.yaml").is_file()
    return out


def _rows(folder: Path) -> list[dict]:
    return [
        json.loads(line)
        for split in ("train", "validation")
        for line in (folder / f"{split}.jsonl").read_text().splitlines()
    ]


def test_rows_hold_exactly_what_the_policy_saw(episode: Path, tmp_path: Path) -> None:
    report = build_dataset([episode], tmp_path / "d")
    rows = _rows(tmp_path / "d")
    requests = [
        json.loads(x)
        for x in (episode / "trajectory.jsonl").read_text().splitlines()
        if json.loads(x)["type"] == "request"
    ]
    assert report.episodes == 1 and sum(report.rows.values()) == len(rows) >= 1
    labelled = []
    for row in rows:
        assistant = [i for i, m in enumerate(row["messages"]) if m["role"] == "assistant"]
        assert len(assistant) == len(row["weights"]) == len(row["requests"])
        for i, t, h in zip(assistant, row["requests"], row["context_sha256"], strict=True):
            if (
                t
            ):  # a labelled turn (0: earlier context): its prefix is the history h_t the policy saw
                assert messages_sha256(row["messages"][:i]) == h
                labelled.append(t)
    assert labelled == [r["t"] for r in requests]  # every request once, in order
    stats = json.loads((tmp_path / "d" / "stats.json").read_text())
    assert (
        stats["median_physical_actions"]["pick_place"]
        == json.loads((episode / "summary.json").read_text())["physical_actions"]
    )
    # the SFT loader reads them as they are
    loaded = load_rows(tmp_path / "d")
    assert [r.id for r in loaded] == [r["id"] for r in rows]


def test_a_bag_gives_the_rows_of_its_episode_folder(episode: Path, tmp_path: Path) -> None:
    build_dataset([episode], tmp_path / "folder")
    build_dataset([episode / "bag"], tmp_path / "bag")
    a, b = _rows(tmp_path / "folder"), _rows(tmp_path / "bag")
    assert [r["messages"] for r in a] == [r["messages"] for r in b]
    assert [r["weights"] for r in a] == [r["weights"] for r in b]
    # both together: the same rows once
    report = build_dataset([episode, episode / "bag"], tmp_path / "both")
    assert report.duplicates == len(a) and sum(report.rows.values()) == len(a)


def test_a_tampered_context_is_refused_and_reported(
    episode: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(episode, bad, ignore=shutil.ignore_patterns("bag", "workspace"))
    lines = (bad / "trajectory.jsonl").read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    recs[0]["task_md"] = recs[0]["task_md"].replace("red cube", "blue cube")
    (bad / "trajectory.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    report = build_dataset([episode, bad], tmp_path / "d")  # a bad input among good ones: skipped
    assert report.episodes == 1 and len(report.skipped) == 1
    assert (
        "context_sha256" in report.skipped[0]["error"] and str(bad) in report.skipped[0]["source"]
    )
    assert (
        main(["learn", "dataset", str(bad), "--out", str(tmp_path / "e")]) == 2
    )  # alone: an error
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("captain learn dataset: no usable episode")


def test_outcome_filter(episode: Path, tmp_path: Path) -> None:
    failed = tmp_path / "failed"
    shutil.copytree(episode, failed, ignore=shutil.ignore_patterns("bag", "workspace"))
    summary = json.loads((failed / "summary.json").read_text())
    summary.update(strict_success=False, host_success=True, outcome="success_no_finish")
    (failed / "summary.json").write_text(json.dumps(summary))
    assert build_dataset([failed, episode], tmp_path / "s", outcomes="strict").filtered_out == 1
    host = build_dataset([failed, episode], tmp_path / "h", outcomes="host")
    assert host.filtered_out == 0 and host.duplicates > 0  # same messages, kept once
    with pytest.raises(DatasetError, match="outcomes"):
        build_dataset([episode], tmp_path / "x", outcomes="best")


def _req(t: int, code: str, error: bool = False, rejected: bool = False) -> dict:
    return {
        "t": t,
        "calls": [{"code": code, "error": "NameError" if error else None}],
        "gate": [{"accepted": False}] if rejected else [],
    }


def test_turn_weights_follow_the_rules() -> None:
    reqs = [
        _req(1, "a"),
        _req(2, "b", error=True),
        _req(3, "c", error=True),  # 3: repeated failure
        _req(4, "a"),  # 4: the code of request 1 again (a recovery loop)
        _req(5, "d", rejected=True),
        _req(6, "e"),
    ]  # 6: after a rejected finish()
    assert turn_weights(reqs) == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]


def test_a_repeat_after_progress_is_not_a_loop() -> None:
    """The expert re-verifies after acting (stack: the lower pair again once the tower stands):
    kept. The same code right after itself, or with a failure since its last run, is a loop."""
    stack = ["perceive", "place g", "verify g", "perceive", "place r", "verify r", "verify g",
             "verify r", "finish"]  # fmt: skip
    assert turn_weights([_req(t, c) for t, c in enumerate(stack, 1)]) == [1.0] * 9
    assert turn_weights([_req(1, "a"), _req(2, "a")]) == [1.0, 0.0]  # again at once
    assert turn_weights([_req(1, "a"), _req(2, "b", error=True), _req(3, "a")]) == [1.0, 1.0, 0.0]
    assert turn_weights([_req(1, "a", error=True), _req(2, "b"), _req(3, "a")]) == [1.0, 1.0, 0.0]
    assert turn_weights([_req(1, "a"), _req(2, "b"), _req(3, "a")]) == [1.0, 1.0, 1.0]


def test_coordinate_mask(episode: Path, tmp_path: Path) -> None:
    from captain_ros.harness.record.trajectory import turn_from_record

    code = 'p = mark_point(h, "head", 120, 80.5)\nq = mark_point(h, cam, u=33, v=44)'
    turn = turn_from_record(
        {
            "t": 1,
            "reasoning": "",
            "calls": [{"call_id": "c", "code": code, "output": "ok"}],
            "notice": "",
        }
    )
    assert has_coordinates(turn)
    masked = mask_turn(turn).calls[0].code
    assert (
        "120" not in masked and "80.5" not in masked and "33" not in masked and "44" not in masked
    )
    assert masked.count(MASK) == 4
    full = build_dataset([episode], tmp_path / "m", mask_coords=1.0)
    plain = build_dataset([episode], tmp_path / "p", mask_coords=0.0)
    assert full.episodes == plain.episodes == 1
    with pytest.raises(DatasetError, match="mask"):
        build_dataset([episode], tmp_path / "x", mask_coords=1.5)


def test_split_is_by_task_and_seed() -> None:
    splits = [split_of("pick_place", s, 0.1) for s in range(2000)]
    share = splits.count("validation") / len(splits)
    assert 0.07 < share < 0.13
    assert splits == [split_of("pick_place", s, 0.1) for s in range(2000)]  # deterministic
    assert all(split_of("stack", s, 0.0) == "train" for s in range(100))


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda p: p, "no such file"),
        (lambda p: (p.mkdir(), p)[1], "not an episode folder"),
        (
            lambda p: (p.mkdir(), (p / "x.mcap").write_bytes(b"\x89MCAP0\r\n"), p)[2],
            "truncated bag",
        ),
    ],
)
def test_bad_inputs_get_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make, why: str
) -> None:
    path = make(tmp_path / "in")
    code = main(["learn", "dataset", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and why in err[-1] and err[-1].startswith("captain learn dataset:")


def test_a_malformed_trajectory_line_is_named(episode: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(episode, bad, ignore=shutil.ignore_patterns("bag", "workspace"))
    with (bad / "trajectory.jsonl").open("a") as f:
        f.write("{not json\n")
    report = build_dataset([episode, bad], tmp_path / "d")
    assert len(report.skipped) == 1 and "trajectory.jsonl:" in report.skipped[0]["error"]


def test_an_evaluation_run_is_read_below_its_task_folders(episode: Path, tmp_path: Path) -> None:
    run = tmp_path / "run" / "pick_place"
    shutil.copytree(episode, run / "seed_00012", ignore=shutil.ignore_patterns("workspace"))
    (tmp_path / "run" / "eval.json").write_text("{}")
    report = build_dataset([tmp_path / "run"], tmp_path / "d")
    assert report.episodes == 1 and not report.skipped  # the episode, not also its own bag
