"""A bag recorded by the graph of `ros2 launch captain_ros captain.launch.py` (MuJoCo, recorder
on), one episode driven with `ros2 action send_goal`, exported with `captain bag export --format
lerobot` from the bag and from the episode folder, and read back (LeRobot's own reader too where
its environment exists, CAPTAIN_LEROBOT_PYTHON; docs/data.md)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ros_cli import RosCli, cli_env, goal, require_ros2_cli
from ros_fixtures import ROOT, STATE_DIR, _next_domain

from captain_ros.bags.rosbag2 import read_messages
from captain_ros.cli.main import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(recorder bag, episode folder) of one pick_place episode run by the launched graph."""
    require_ros2_cli()
    tmp = tmp_path_factory.mktemp("launch_export")
    domain = _next_domain()
    cli = RosCli(cli_env(domain), tmp)
    proc = cli.start(
        "launch",
        "captain_ros",
        "captain.launch.py",
        "backend:=mujoco",
        f"bag_dir:={tmp / 'bags'}",
        f"allowed_root:={tmp}",
        log=STATE_DIR / "children" / f"launch-export-{domain}.log",
    )
    try:
        cli.wait_for("action", "/captain/run_episode", 180.0, proc)
        res = cli.run(
            "action",
            "send_goal",
            "/captain/run_episode",
            "captain_ros_interfaces/action/RunEpisode",
            goal(task="pick_place", seed=3, output_dir=str(tmp / "ep")),
            timeout_s=600.0,
        )
        assert "Goal finished with status: SUCCEEDED" in res.stdout, (
            res.stdout[-2000:] + res.stderr[-2000:]
        )
        deadline = time.monotonic() + 60
        while not list((tmp / "bags").glob("*/metadata.yaml")):  # the recorder closes the bag
            assert time.monotonic() < deadline, "the recorder did not close the episode's bag"
            time.sleep(0.5)
        (meta,) = (tmp / "bags").glob("*/metadata.yaml")
        yield meta.parent, tmp / "ep"
    finally:
        cli.stop_all()


def _data(ds: Path) -> dict[str, list[Any]]:
    t = pa.concat_tables([pq.read_table(str(p)) for p in sorted((ds / "data").glob("*/*.parquet"))])
    return {c: t.column(c).to_pylist() for c in t.column_names}


def test_a_launched_graphs_bag_exports_to_lerobot(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    bag, folder = recorded
    summary = json.loads((folder / "summary.json").read_text())
    assert Path(summary["bag_path"]).resolve() == bag.resolve()
    a, b = tmp_path / "from_bag", tmp_path / "from_folder"
    assert main(["bag", "export", "--out", str(a), str(bag)]) == 0
    assert main(["bag", "export", "--out", str(b), str(folder)]) == 0  # finds the recorder's bag
    info = json.loads((a / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == 10 and info["total_episodes"] == 1
    assert {"observation.images.head", "observation.images.wrist"} <= set(info["features"])
    da, db = _data(a), _data(b)
    assert da == db  # one episode, one dataset, whichever way it is named
    n = info["total_frames"]
    assert n == len(da["index"]) >= 20  # a whole episode (several seconds) at 10 frames per second
    # the robot node publishes /joint_states at 10 Hz: a held sample is rarely older than that
    # (the publishing timer may lag a few hundred ms while the arm is busy: held, not hidden)
    ages = np.array(da["captain.sample_age_s"])[:, 0]
    assert np.median(ages) <= 0.1 + 0.02 and ages.max() < 1.0, ages
    js_times = [t for _, t, _ in read_messages(bag, ["/joint_states"])]
    span_s = (js_times[-1] - js_times[0]) / 1e9
    assert n == pytest.approx(span_s * 10, abs=20)  # the leading frames wait for the first images
    eps = pq.read_table(str(a / "meta" / "episodes" / "chunk-000" / "file-000.parquet")).to_pylist()
    assert eps[0]["captain/outcome"] == summary["outcome"] and eps[0]["captain/backend"] == "mujoco"
    assert da["next.success"][-1] == summary["host_success"]
    python = os.environ.get("CAPTAIN_LEROBOT_PYTHON", "")
    if python and Path(python).is_file():  # LeRobot's own reader, where its environment is built
        out = tmp_path / "lerobot.json"
        proc = subprocess.run(
            [python, str(ROOT / "scripts" / "lerobot_read.py"), str(a), str(out)],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = json.loads(out.read_text())
        assert got["num_frames"] == n
        assert np.allclose([f["observation.state"] for f in got["frames"]], da["observation.state"])
