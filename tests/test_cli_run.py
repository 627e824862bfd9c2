"""`captain run` / `eval` / `compare` / `report` end to end (real MuJoCo episode with the scripted expert)."""

from __future__ import annotations

import json

import pytest

from captain_ros.cli.main import build_parser, main
from captain_ros.harness.record.episode_record import EpisodeRecord


@pytest.fixture(scope="module")
def pick_place_episode(tmp_path_factory):
    out = tmp_path_factory.mktemp("ep") / "pick_place_12"
    rc = main(["run", "--task", "pick_place", "--seed", "12", "--out", str(out)])
    return rc, out


def test_captain_run_scripted_pick_place_succeeds_and_writes_the_folder(pick_place_episode, capsys):
    rc, out = pick_place_episode
    assert rc == 0
    s = EpisodeRecord.from_dict(json.loads((out / "summary.json").read_text()))
    assert s.outcome == "success_with_finish" and s.host_success and s.strict_success
    assert 5 <= s.requests <= 20 and s.physical_actions > 3
    assert s.wall_s >= s.model_s + s.backend_s - 1e-6
    records = [json.loads(x) for x in (out / "trajectory.jsonl").read_text().splitlines()]
    assert records[0]["type"] == "episode_start" and records[-1]["type"] == "episode_end"
    html = (out / "report.html").read_text()
    assert "Request 1" in html and "robot.observe()" in html and "<img" in html
    from captain_ros.bags.rosbag2 import read_messages, summarize_bag

    # the in-process bag holds the topics the ROS recorder writes, one message per event
    assert s.bag_path == str(out / "bag") and s.bag_complete
    bag = summarize_bag(out / "bag")
    assert bag.counts["/captain/receipts"] == s.robot_calls
    assert bag.counts["/captain/episode_events"] == 2
    observes = sum(
        1
        for r in records
        if r["type"] == "request"
        for c in r["calls"]
        for rc_ in c.get("robot_calls", [])
        if rc_["name"] == "observe"
    )
    assert bag.counts["/captain/observations"] == observes
    for cam in ("head", "wrist"):
        assert bag.counts[f"/camera/{cam}/image_raw"] == observes
        assert bag.counts[f"/camera/{cam}/depth/image_raw"] == observes
        assert bag.counts[f"/camera/{cam}/camera_info"] == observes
    assert bag.counts["/joint_states"] == s.requests + s.robot_calls
    assert bag.counts["/captain/wrench/arm"] == bag.counts["/joint_states"]
    assert bag.counts["/tf_static"] == 1
    priv_lines = (out / "privileged.jsonl").read_text().splitlines()
    assert bag.counts["/captain/privileged"] == len(priv_lines) == 2 * s.requests + 2
    assert bag.msgtypes["/joint_states"] == "sensor_msgs/msg/JointState"
    assert bag.msgtypes["/camera/head/image_raw"] == "sensor_msgs/msg/Image"
    caps = [m.capability for _t, _ts, m in read_messages(out / "bag", ["/captain/receipts"])]
    assert "move_to" in caps and "measure_object_geometry" in caps and caps[-1] == "finish"
    js = next(m for _t, _ts, m in read_messages(out / "bag", ["/joint_states"]))
    assert list(js.name)[-1] == "arm_jaw_opening_m" and len(js.position) == 7


def test_run_prints_live_receipts_and_summary(tmp_path, capsys):
    replay = tmp_path / "r.jsonl"
    replay.write_text(
        json.dumps({"reasoning": "look", "code": "r = robot.observe(); print(r.success)"}) + "\n"
    )
    rc = main(
        [
            "run",
            "--task",
            "pick_place",
            "--seed",
            "1001",
            "--backend",
            "fake",
            "--policy",
            f"replay:{replay}",
            "--out",
            str(tmp_path / "ep"),
            "--no-bag",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0
    assert "request 1" in text and "observe: ok" in text and "> look" in text
    assert "outcome" in text and "strict success" in text and "wall time" in text
    s = json.loads((tmp_path / "ep" / "summary.json").read_text())
    assert s["outcome"] == "other_failure" and s["requests"] == 2 and not s["host_success"]


def test_run_json_flag_prints_only_json(tmp_path, capsys):
    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"code": "x = 1"}) + "\n")
    main(
        [
            "run",
            "--task",
            "stack",
            "--seed",
            "1002",
            "--backend",
            "fake",
            "--policy",
            f"replay:{replay}",
            "--out",
            str(tmp_path / "ep"),
            "--json",
            "--no-bag",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert data["task"] == "stack" and data["policy"].startswith("replay:")


def test_eval_check_and_compare(tmp_path, capsys):
    main(
        [
            "eval",
            "--task",
            "pick_place,stack",
            "--seeds",
            "1000-1002",
            "--check",
            "--out",
            str(tmp_path / "a"),
        ]
    )
    text = capsys.readouterr().out
    assert "pick_place" in text and "100.0%" in text
    data = json.loads((tmp_path / "a" / "eval.json").read_text())
    assert data["overall"]["episodes"] == 6
    main(["compare", str(tmp_path / "a"), str(tmp_path / "a"), "--json"])
    cmp = json.loads(capsys.readouterr().out)
    assert cmp["paired"] == 6 and cmp["mcnemar"]["p_value"] == 1.0


def test_parser_rejects_unknown_backend_and_task(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--backend", "gazebo"])
    capsys.readouterr()
    assert main(["eval", "--task", "juggle", "--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown task 'juggle'" in err[0] and "pick_place" in err[0]
