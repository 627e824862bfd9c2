"""`captain bag replay BAG --backend mujoco`: a recorded episode's robot calls re-run in MuJoCo.

The identity check: a MuJoCo bag replayed in MuJoCo departs by nothing at all (the same scene
seed, the same calls, deterministic physics and rendering). A bag of the PiPER through its CAN
emulator (the hardware path: the SDK, the bus, the emulated arm's own dynamics) departs by a few
milliradians, with the same gripper timing and the same outcome.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from captain_ros.cli.main import main


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from captain_ros.evaluation.config import EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.episode import run_one

    root = tmp_path_factory.mktemp("replay_eps")
    run_one(
        EpisodeConfig(
            "pick_place", 1, str(root / "mujoco"), recording=RecordingConfig(report=False)
        )
    )
    # the emulated PiPER in a process of its own (its virtual CAN bus and real-time threads)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "captain_ros.cli.main",
            "run",
            "--task",
            "pick_place",
            "--seed",
            "1",
            "--backend",
            "piper",
            "--emulate",
            "--out",
            str(root / "piper"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert (root / "piper" / "summary.json").is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return {"mujoco": root / "mujoco", "piper": root / "piper"}


def _replay(folder: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    capsys.readouterr()
    assert (
        main(["bag", "replay", str(folder / "bag"), "--backend", "mujoco", "--out", str(out)]) == 0
    )
    text = capsys.readouterr().out
    assert (out / "replay.png").stat().st_size > 10_000
    return json.loads((out / "replay.json").read_text()), text


def test_a_mujoco_bag_replays_in_mujoco_exactly(
    recorded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, text = _replay(recorded["mujoco"], tmp_path, capsys)
    summary = json.loads((recorded["mujoco"] / "summary.json").read_text())
    assert report["recorded_backend"] == "mujoco" and report["task"] == "pick_place"
    assert len(report["calls"]) == summary["robot_calls"] - 1  # all but finish(), the harness's
    assert (
        max(report["joint_max_rad"]) < 1e-9
        and report["jaw_max_m"] < 1e-9
        and report["force_max_n"] < 1e-9
    )
    assert report["success_mismatches"] == [] and report["gripper"]["same_calls"]
    assert [c["holding"] for c in report["gripper"]["recorded"]["changes"]] == [
        True,
        False,
    ]  # grasp, release
    assert report["outcome"] == {
        "recorded_host_success": True,
        "replayed_success": True,
        "recorded_outcome": "success_with_finish",
    }
    assert "starts at the recorded joint state" in report["initial_restore"]
    timing = report["timing"]
    assert timing["physical_calls"] >= 10 and timing["replayed_s"] == timing["recorded_s"] > 0
    assert "largest 0.00" in text


def test_an_emulated_piper_bag_departs_by_milliradians(
    recorded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The emulated arm runs in real time on a shared machine: its episode can differ from run to
    run (a move stopped early, an e-stop on stale feedback); the report must say what happened."""
    from captain_ros.bags.rosbag2 import read_messages

    report, _ = _replay(recorded["piper"], tmp_path / "a", capsys)
    summary = json.loads((recorded["piper"] / "summary.json").read_text())
    assert report["recorded_backend"] == "piper"
    assert report["outcome"]["recorded_outcome"] == summary["outcome"]
    errors = np.array([np.abs(np.subtract(*c["joints_rad"][::-1])).max() for c in report["calls"]])
    assert errors.max() > 1e-5  # not the identity: another arm, another bus
    # the recorded side is the bag: the first /joint_states sample at or after each call's receipt
    js = [(t, m) for _, t, m in read_messages(recorded["piper"] / "bag", ["/joint_states"])]
    receipts = {
        m.call_index: t
        for _, t, m in read_messages(recorded["piper"] / "bag", ["/captain/receipts"])
    }
    times = [t for t, _ in js]
    for c in report["calls"]:
        i = min(int(np.searchsorted(times, receipts[c["call"]], side="left")), len(js) - 1)
        assert np.allclose(c["joints_rad"][0], js[i][1].position[:6])
    # the simulated side is deterministic: a second replay gives the same states
    again, _ = _replay(recorded["piper"], tmp_path / "b", capsys)
    assert [c["joints_rad"][1] for c in again["calls"]] == [
        c["joints_rad"][1] for c in report["calls"]
    ]
    mismatched = {(m["request"], m["call"]) for m in report["success_mismatches"]}
    assert mismatched == {
        (c["request"], c["call"]) for c in report["calls"] if c["success"][0] != c["success"][1]
    }
    if summary["outcome"] == "success_with_finish":  # the usual run: milliradians, same grasp
        assert np.median(errors) < 0.02 and report["jaw_max_m"] < 0.005
        assert report["gripper"]["same_calls"] and report["outcome"]["replayed_success"]
        assert 0.5 < report["timing"]["replayed_over_recorded"] < 1.5
    else:  # the emulated run failed (e.g. an e-stop): the simulation departs from it, and says so
        assert (
            report["outcome"]["replayed_success"] != report["outcome"]["recorded_host_success"]
            or mismatched
        )


def test_a_bag_of_two_episodes_is_refused_in_one_line(
    recorded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rosbags.rosbag2 import Reader

    from captain_ros.bags.rosbag2 import BagWriter

    both = tmp_path / "both"
    writer = BagWriter(both)
    for name in ("mujoco", "piper"):
        with Reader(recorded[name] / "bag") as r:
            for conn, t, raw in r.messages():
                if not writer.has_topic(conn.topic):
                    writer.add_topic(conn.topic, conn.msgtype)
                writer.write(conn.topic, t, raw)
    writer.close()
    capsys.readouterr()
    assert main(["bag", "replay", str(both), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds 2 episodes" in err[0]
