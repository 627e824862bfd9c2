"""The shipped student under the real `ros2 launch ... policy:=student` + `ros2 action send_goal`.

The policy node builds the student from the package (the packaged SmolLM2 plus the default
student's LoRA adapter, on llama.cpp, with the `student` profile) for the goal, and the episode's
record says so. The goal allows 3 requests (the student's first three steps: set-up, perceive,
descend), which keeps the test short on a loaded machine; its held-out success is measured by
benchmarks/experiments/exp_student.py, not here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ros_cli import goal, require_ros2_cli
from test_ros_launch_rigs import SEND_GOAL, result_fields, start_graph

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.learn]


def test_policy_student_runs_the_shipped_student_through_the_launch(tmp_path: Path) -> None:
    from captain_ros.policy.students import get_student

    student = get_student()  # the package ships one
    require_ros2_cli()
    cli, proc = start_graph(tmp_path, 70 + os.getpid() % 10, "backend:=mujoco", "policy:=student",
                            "task:=pick_place")  # fmt: skip
    try:
        res = cli.run(
            *SEND_GOAL,
            goal(task="pick_place", seed=950, max_requests=3, output_dir=str(tmp_path / "ep")),
            timeout_s=600.0,
        )
    finally:
        cli.stop_all()
    fields = result_fields(res.stdout)
    assert fields.get("outcome_label"), res.stdout[-3000:]
    summary = json.loads((tmp_path / "ep" / "summary.json").read_text())
    runtime = summary["extra"]["policy_runtime"]
    assert runtime["engine"] == "llamacpp", runtime
    assert Path(runtime["adapter"]) == student.adapter
    start = json.loads((tmp_path / "ep" / "trajectory.jsonl").read_text().splitlines()[0])
    assert start["profile"] == "student"
    assert summary["requests"] >= 1 and summary["completion_tokens"] > 0
