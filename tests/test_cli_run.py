"""`captain run` / `eval` / `compare` / `report` end to end (real MuJoCo episode with the scripted expert)."""

from __future__ import annotations

import json

import pytest

from captain_ros.cli.main import build_parser, main
from captain_ros.evaluation.summary import EpisodeSummary


@pytest.fixture(scope="module")
def pick_place_episode(tmp_path_factory):
    out = tmp_path_factory.mktemp("ep") / "pick_place_1000"
    rc = main(["run", "--task", "pick_place", "--seed", "1000", "--out", str(out)])
    return rc, out


def test_captain_run_scripted_pick_place_succeeds_and_writes_the_folder(pick_place_episode, capsys):
    rc, out = pick_place_episode
    assert rc == 0
    s = EpisodeSummary.from_dict(json.loads((out / "summary.json").read_text()))
    assert s.outcome == "success_with_finish" and s.host_success and s.strict_success
    assert 5 <= s.requests <= 20 and s.physical_actions > 3
    assert s.wall_s >= s.model_s + s.backend_s - 1e-6
    records = [json.loads(x) for x in (out / "trajectory.jsonl").read_text().splitlines()]
    assert records[0]["type"] == "episode_start" and records[-1]["type"] == "episode_end"
    html = (out / "report.html").read_text()
    assert "Request 1" in html and "robot.observe()" in html and "<img" in html
    from captain_ros.ros.bag import read_messages, summarize_bag

    bag = summarize_bag(out / "bag")
    assert bag.counts["/captain/receipts"] > 10 and bag.counts["/captain/episode"] == 1
    caps = [m.capability for _t, _ts, m in read_messages(out / "bag", ["/captain/receipts"])]
    assert "move_to" in caps and "measure_object_geometry" in caps


def test_run_prints_live_receipts_and_summary(tmp_path, capsys):
    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"reasoning": "look", "code": "r = robot.observe(); print(r.success)"})
                      + "\n")
    rc = main(["run", "--task", "pick_place", "--seed", "1001", "--backend", "fake",
               "--policy", f"replay:{replay}", "--out", str(tmp_path / "ep"), "--no-bag"])
    text = capsys.readouterr().out
    assert rc == 0
    assert "request 1" in text and "observe: ok" in text and "> look" in text
    assert "outcome" in text and "strict success" in text and "wall time" in text
    s = json.loads((tmp_path / "ep" / "summary.json").read_text())
    assert s["outcome"] == "other_failure" and s["requests"] == 2 and not s["host_success"]


def test_run_json_flag_prints_only_json(tmp_path, capsys):
    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"code": "x = 1"}) + "\n")
    main(["run", "--task", "stack", "--seed", "1002", "--backend", "fake", "--policy",
          f"replay:{replay}", "--out", str(tmp_path / "ep"), "--json", "--no-bag"])
    data = json.loads(capsys.readouterr().out)
    assert data["task"] == "stack" and data["policy"].startswith("replay:")


def test_eval_check_and_compare(tmp_path, capsys):
    main(["eval", "--task", "pick_place,stack", "--seeds", "1000-1002", "--check",
          "--out", str(tmp_path / "a")])
    text = capsys.readouterr().out
    assert "pick_place" in text and "100.0%" in text
    data = json.loads((tmp_path / "a" / "eval.json").read_text())
    assert data["overall"]["episodes"] == 6
    main(["compare", str(tmp_path / "a"), str(tmp_path / "a"), "--json"])
    cmp = json.loads(capsys.readouterr().out)
    assert cmp["paired"] == 6 and cmp["mcnemar"]["p_value"] == 1.0


def test_parser_rejects_unknown_backend_and_task():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--backend", "gazebo"])
    with pytest.raises(SystemExit):
        main(["eval", "--task", "juggle", "--check"])
