"""Bring-up of the hardware backends through the ROS graph: the robot node's backend_config / can /
emulate parameters, and a bag recorded through the graph on the PiPER emulator has the topic set of
a simulation bag minus /captain/privileged (so the dataset builder reads hardware bags)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ros_fixtures import ROOT, STATE_DIR

from captain_ros.bags.rosbag2 import summarize_bag
from captain_ros.core.share import share_path
from captain_ros.learn.data import build_dataset
from captain_ros.ros.env import ros_environment
from captain_ros.ros.robot_params import backend_config


def backend_options(values: dict[str, object]) -> dict[str, object]:
    return dict(backend_config({"task": "pick_place", "seed": 0, **values}).options)


def test_robot_node_parameters_map_to_backend_options() -> None:
    base = {"backend": "piper", "backend_config": "", "can": "", "emulate": False}
    assert backend_options(base) == {}
    assert backend_options(
        {**base, "backend_config": "config/piper_dual.yaml", "can": "can0,can1", "emulate": True}
    ) == {"config": "config/piper_dual.yaml", "can": "can0,can1", "emulate": True}
    assert backend_options(
        {**base, "backend": "ros_arm", "backend_config": "config/xr1.yaml", "can": "can0"}
    ) == {"config": "config/xr1.yaml"}
    assert backend_options({**base, "backend": "mujoco", "emulate": True}) == {}


def _up(tmp_path: Path, domain_id: int, name: str, robot: dict[str, object]) -> Path:
    params = yaml.safe_load(share_path("config", "captain.yaml").read_text())
    params["captain_robot"]["ros__parameters"].update(robot)
    params_file = tmp_path / f"{name}.yaml"
    params_file.write_text(yaml.safe_dump(params))
    env = ros_environment(STATE_DIR, domain_id)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "captain_ros.ros.up",
            "--params-file",
            str(params_file),
            "--task",
            "pick_place",
            "--seed",
            "3",
            "--max-requests",
            "2",
            "--quiet",
            "--out",
            str(tmp_path / name),
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = proc.stdout
    summary = json.loads(out[out.index("{\n") :])
    assert summary["requests"] == 2, summary
    return Path(summary["bag"])


@pytest.mark.slow
def test_emulator_bag_has_the_simulation_topic_set_minus_privileged(
    tmp_path: Path, domain_id: int
) -> None:
    sim_bag = _up(tmp_path, domain_id, "mujoco", {"backend": "mujoco"})
    hw_bag = _up(
        tmp_path,
        domain_id,
        "piper",
        {"backend": "piper", "emulate": True, "can": f"vcan-bag-{domain_id}"},
    )
    sim, hw = summarize_bag(sim_bag), summarize_bag(hw_bag)
    # the dataset builder reads a hardware bag (no privileged topic) like a simulation bag
    report = build_dataset([hw_bag], tmp_path / "rows", outcomes="all")
    assert report.episodes == 1 and sum(report.rows.values()) >= 1 and not report.skipped
    assert "/captain/privileged" in sim.counts and "/captain/privileged" not in hw.counts
    assert set(hw.msgtypes) == set(sim.msgtypes) - {"/captain/privileged"}
    assert {t: hw.msgtypes[t] for t in hw.msgtypes} == {t: sim.msgtypes[t] for t in hw.msgtypes}
    assert hw.counts["/joint_states"] > 0 and hw.counts["/captain/receipts"] > 0
