"""Issue 33: robosuite under the same launch file. ``ros2 launch captain_ros captain.launch.py
backend:=robosuite task:=lift`` starts the graph on robosuite's Lift (the short task name resolved by
the backend), a ``ros2 action send_goal`` runs the scripted expert through it, and the episode's bag
is read back: receipts, joint states, camera images and robosuite's own success in the privileged
stream (the terminal record's host success is robosuite's ``_check_success()``).
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from ros_cli import goal, require_ros2_cli
from test_ros_launch_rigs import SEND_GOAL, result_fields, start_graph

from captain_ros.bags.rosbag2 import read_messages, summarize_bag

pytestmark = [
    pytest.mark.ros,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("robosuite") is None,
        reason="robosuite extra not installed (scripts/setup_robosuite.sh)",
    ),
]


def test_robosuite_lift_through_the_launch_with_a_bag(tmp_path: Path) -> None:
    require_ros2_cli()
    cli, proc = start_graph(tmp_path, 60 + os.getpid() % 10, "backend:=robosuite", "task:=lift",
                            "seed:=1000")  # fmt: skip
    try:
        # the policy node's action server is up before the robot process has built robosuite
        # (3-7 s here): a goal's short task name is resolved with the robot node's backend
        cli.wait_for("service", "/captain/robot/privileged_state", 240.0, proc)
        res = cli.run(*SEND_GOAL, goal(task="lift", seed=1000, output_dir=str(tmp_path / "ep")),
                      timeout_s=600.0)  # fmt: skip
        assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-3000:]
        fields = result_fields(res.stdout)
        assert fields["outcome_label"] == "success_with_finish", fields
        assert fields["strict_success"] == "true"
        summary = json.loads(fields["summary_json"])
        assert summary["backend"] == "robosuite" and summary["task"] == "robosuite_lift"
        bag = fields["bag_path"]
        counts = summarize_bag(bag).counts
        for topic in ("/captain/receipts", "/joint_states", "/captain/privileged",
                      "/captain/episode_events"):  # fmt: skip
            assert counts.get(topic, 0) > 0, (topic, counts)
        assert any(t.startswith("/camera/") and n > 0 for t, n in counts.items()), counts
        rows = [json.loads(m.data) for _, _, m in read_messages(bag, ["/captain/privileged"])]
        states = [r for r in rows if r.get("type") == "state"]
        assert len(states) >= 3 and states[-1]["solved"] is True
        terminal = [r for r in rows if r.get("type") == "terminal"]
        assert terminal and terminal[-1]["host_success"] is True  # robosuite's _check_success()
        log = cli.log_of(proc)
        assert "configured robosuite backend" in log and "Traceback" not in log
    finally:
        cli.stop_all()
