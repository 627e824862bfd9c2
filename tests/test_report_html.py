"""report.html from an episode folder: per-request reasoning, code, receipts, images; escaping."""

import json

from captain_ros.report.html import render_report, write_report


def _folder(tmp_path):
    (tmp_path / "summary.json").write_text(
        json.dumps(
            {
                "task": "pick_place",
                "seed": 3,
                "outcome": "false_finish",
                "host_success": False,
                "strict_success": False,
                "requests": 1,
                "physical_actions": 2,
                "wall_s": 3.0,
                "model_s": 1.0,
                "harness_s": 2.0,
                "backend_s": 1.5,
                "policy": "scripted",
                "backend": "fake",
            }
        )
    )
    recs = [
        {
            "type": "episode_start",
            "task": "pick_place",
            "seed": 3,
            "task_md": "## Task\nput <b>it</b>",
            "initial_images": [
                {"path": "images/r000_initial_head.png", "camera": "head", "handle": "obs_1"}
            ],
        },
        {
            "type": "request",
            "t": 1,
            "reasoning": "I will <script>alert(1)</script> look",
            "calls": [
                {
                    "code": "print('a' < 'b')",
                    "output": "True\n[move_to] reached; peak 0.5 N",
                    "images": [{"path": "images/r001_wrist.png", "camera": "wrist"}],
                }
            ],
            "gate": [{"accepted": False, "reason": "measure first"}],
            "model_s": 1.0,
            "backend_s": 0.5,
            "harness_s": 0.01,
            "malformed": ["unknown tool 'bash'"],
        },
        {"type": "episode_end", "summary": {}},
    ]
    (tmp_path / "trajectory.jsonl").write_text(
        "\n".join(json.dumps(r) for r in recs) + "\nnot json\n"
    )
    return tmp_path


def test_report_shows_requests_code_receipts_images_and_gate(tmp_path):
    html = render_report(_folder(tmp_path))
    assert "Episode pick_place seed 3" in html and "false_finish" in html
    assert "Request 1" in html and "print(&#x27;a&#x27; &lt; &#x27;b&#x27;)" in html
    assert "[move_to] reached; peak 0.5 N" in html
    assert 'src="images/r001_wrist.png"' in html and 'src="images/r000_initial_head.png"' in html
    assert "measure first" in html and "unknown tool" in html
    assert "<script>" not in html and "&lt;script&gt;" in html and "<b>it</b>" not in html


def test_write_report_and_empty_folder(tmp_path):
    path = write_report(_folder(tmp_path))
    assert path.name == "report.html" and path.read_text().startswith("<!doctype html>")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "(no requests recorded)" in render_report(empty)


# --- an operator's reading order, on real episodes ------------------------------------------------
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from harness_helpers import SOLVE_RED_ON_BLUE, RedOnBlueTask, make_stack  # noqa: E402

from captain_ros.harness import run_episode  # noqa: E402
from captain_ros.policy.replay import ReplayPolicy  # noqa: E402
from captain_ros.report.overview import request_row  # noqa: E402
from captain_ros.report.plots import motion_traces  # noqa: E402
from captain_ros.report.record import EpisodeFolder  # noqa: E402


@pytest.fixture(scope="module")
def harness_episode(tmp_path_factory):
    """A real episode (FakeBackend, real motion/perception, the harness's own summary.json: the
    folder the ROS policy node writes, which names neither policy nor backend)."""
    _backend, robot = make_stack()
    out = tmp_path_factory.mktemp("report") / "ep"
    s = run_episode(RedOnBlueTask(), 0, robot, ReplayPolicy(SOLVE_RED_ON_BLUE), out_dir=out)
    assert s.outcome == "success_with_finish"
    return out, render_report(out)


def test_overview_comes_first_and_task_md_is_folded(harness_episode):
    out, html = harness_episode
    assert html.index("id='overview'") < html.index("id='req-1'") < html.index("id='req-4'")
    fold = html.index("<details class='task'>")
    assert (
        html.index("id='overview'")
        < fold
        < html.index("# TASK: red_on_blue")
        < html.index("</details>")
        < html.index("id='req-1'")
    )
    overview = html[html.index("id='overview'") : fold]
    assert "4 requests, 8 physical actions" in overview
    assert all(f"href='#req-{t}'" in overview for t in range(1, 5))
    assert "finish accepted" in overview and "move_to x5" in overview


def test_overview_rows_follow_the_records(harness_episode):
    out, _ = harness_episode
    ep = EpisodeFolder.load(out)
    rows = [request_row(r) for r in ep.requests]
    used = [r["budget"]["physical_actions_used"] for r in ep.requests]
    assert [row.physical_count for row in rows] == [
        b - a for a, b in zip([0, *used], used, strict=False)
    ]
    assert [row.outcome for row in rows] == ["ok", "ok", "ok", "finish accepted"]
    assert rows[2].physical.startswith("move_to x2") and "release" in rows[2].physical
    assert (
        rows[0].calls == 4 and rows[0].failures == "" and rows[3].gate.startswith("finish accepted")
    )


def test_each_request_with_sweeps_has_a_path_and_force_plot(harness_episode):
    out, html = harness_episode
    ep = EpisodeFolder.load(out)
    traces = motion_traces(ep.requests[1])
    sweeps = [
        rc
        for c in ep.requests[1]["calls"]
        for rc in c["robot_calls"]
        if rc["name"] == "move_to" and rc["kwargs"].get("jaw") is None
    ]
    assert len(traces) == len(sweeps) == 3
    for tr, rc in zip(traces, sweeps, strict=True):
        assert len(tr.t_s) >= 3 and np.all(np.diff(tr.t_s) > 0) and np.all(tr.force_n >= 0)
        assert np.allclose(tr.position_m[-1], rc["result"]["value"]["tcp_position_m"], atol=2e-4)
    assert motion_traces(ep.requests[0]) == []  # no motion, no plot
    body = [html[html.index(f"id='req-{t}'") :] for t in (1, 2, 3, 4)]
    has_svg = [
        "<svg" in b[: b.index("</div><div class='req'") if t < 4 else None]
        for t, b in zip((1, 2, 3, 4), body, strict=True)
    ]
    assert has_svg == [False, True, True, False]
    assert html.count("<svg") == 2 and "tool path (top view" in html and "contact force" in html


def test_policy_and_backend_read_what_exists_and_say_unknown(harness_episode, tmp_path):
    out, html = harness_episode
    assert "<td>policy</td><td>unknown (not recorded)</td>" in html
    assert "<td>backend</td><td>unknown (not recorded)</td>" in html
    assert "<td>finish() accepted</td><td><span class='ok'>True</span>" in html  # finish_called
    # the evaluation runner's summary (other key names, its own harness_s) reads the same
    (tmp_path / "summary.json").write_text(
        json.dumps(
            {
                "task": "stack",
                "seed": 4,
                "policy": "scripted",
                "backend": "mujoco",
                "outcome": "missed_finish",
                "host_success": True,
                "strict_success": False,
                "finished": False,
                "wall_s": 10.0,
                "model_s": 1.0,
                "harness_s": 9.0,
                "backend_s": 6.0,
                "extra": {"end_reason": "no_tool_call"},
            }
        )
    )
    page = render_report(tmp_path)
    assert "<td>policy</td><td>scripted</td>" in page and "<td>backend</td><td>mujoco</td>" in page
    assert "robot calls 6.0 s, session and harness 3.0 s" in page and "no_tool_call" in page


def test_cli_episode_names_policy_and_backend_and_plots_its_motions(tmp_path):
    from captain_ros.cli.main import main

    replay = tmp_path / "r.jsonl"
    replay.write_text(
        json.dumps(
            {
                "reasoning": "move",
                "code": "p = robot.get_robot_state().value\n"
                "robot.move_to([0.25, 0.0, 0.20], [0, 1, 0, 0], speed_m_s=0.2)",
            }
        )
        + "\n"
    )
    out = tmp_path / "ep"
    assert (
        main(
            [
                "run",
                "--task",
                "pick_place",
                "--seed",
                "5",
                "--backend",
                "fake",
                "--policy",
                f"replay:{replay}",
                "--out",
                str(out),
                "--no-bag",
            ]
        )
        == 0
    )
    html = (out / "report.html").read_text()
    assert (
        f"<td>policy</td><td>replay:{replay}</td>" in html
        and "<td>backend</td><td>fake</td>" in html
    )
    assert html.count("<svg") == 1


def test_malformed_logs_are_skipped_and_read_motion_trajectory_is_the_fallback(tmp_path):
    samples = [
        {"t_s": 0.02 * i, "position_m": [0.3, 0.0, 0.2 - 0.01 * i], "force_n": float(i)}
        for i in range(6)
    ]
    bad = {"t_s": [0, 1, float("nan")], "position_m": [[0, 0, 0]] * 3, "force_n": [0, 0, 0]}
    req = {
        "type": "request",
        "t": 1,
        "calls": [
            {
                "code": "x",
                "output": "",
                "robot_calls": [
                    {
                        "name": "move_to",
                        "kwargs": {},
                        "result": {
                            "success": True,
                            "executed": True,
                            "diagnostics": {"trace": {"arm": bad}},
                        },
                    },
                    {
                        "name": "move_to",
                        "kwargs": {},
                        "result": {"success": True, "diagnostics": {"trace": "x"}},
                    },
                    {
                        "name": "read_motion_trajectory",
                        "kwargs": {},
                        "result": {"success": True, "value": {"arm": "arm", "samples": samples}},
                    },
                    "not a dict",
                ],
            },
            7,
        ],
    }
    (tmp_path / "trajectory.jsonl").write_text(json.dumps(req) + "\n[1, 2]\n")
    (tmp_path / "summary.json").write_text("{broken")
    assert motion_traces(req) == []
    html = render_report(tmp_path)
    assert html.count("<svg") == 1 and "read_motion_trajectory" in html
    assert "<td>outcome</td><td>unknown</td>" in html
