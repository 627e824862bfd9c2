"""`captain bag export --format lerobot`: real MuJoCo episodes (scripted expert) recorded to
episode folders and their bags, exported to one LeRobotDataset v3.0 and read back against the
bags: with pyarrow + PyAV here, and with LeRobot's own ``LeRobotDataset`` where its environment
exists (``CAPTAIN_LEROBOT_PYTHON``, built by scripts/lerobot_env.sh; docs/data.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from captain_ros.bags.rosbag2 import read_messages
from captain_ros.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
FPS = 10


@pytest.fixture(scope="module")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two MuJoCo pick_place episodes and one of the fake rig (another robot), each with its bag."""
    from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.episode import run_one

    root = tmp_path_factory.mktemp("lerobot_eps")
    out = {}
    for name, backend, seed in (("a", "mujoco", 1), ("b", "mujoco", 2), ("fake", "fake", 1)):
        run_one(
            EpisodeConfig(
                "pick_place",
                seed,
                str(root / name),
                backend=BackendConfig(backend),
                recording=RecordingConfig(report=False),
            )
        )
        out[name] = root / name
    return out


@pytest.fixture(scope="module")
def dataset(episodes: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lerobot_ds") / "ds"
    assert (
        main(
            [
                "bag",
                "export",
                "--format",
                "lerobot",
                "--fps",
                str(FPS),
                "--out",
                str(out),
                str(episodes["a"]),
                str(episodes["b"]),
            ]
        )
        == 0
    )
    return out


def _table(path: Path) -> Any:
    import pyarrow.parquet as pq

    return pq.read_table(str(path))


def _data(ds: Path) -> dict[str, np.ndarray]:
    import pyarrow as pa

    tables = [_table(p) for p in sorted((ds / "data").glob("chunk-*/file-*.parquet"))]
    t = pa.concat_tables(tables)
    return {
        c: np.array(
            t.column(c).to_pylist(), dtype=object if t.column(c).type == pa.string() else None
        )
        for c in t.column_names
    }


def _held(times: list[int], t: int) -> int:
    return int(np.searchsorted(np.array(times), t, side="right")) - 1


def _instruction(folder: Path) -> str:
    return (folder / "TASK.md").read_text().split("## Instruction\n\n", 1)[1].split("\n", 1)[0]


def test_the_layout_and_schema_are_lerobot_v3(dataset: Path, episodes: dict[str, Path]) -> None:
    import pandas as pd
    import pyarrow as pa

    info = json.loads((dataset / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == FPS and info["total_episodes"] == 2
    data = _data(dataset)
    assert info["total_frames"] == len(data["index"]) and list(data["index"]) == list(
        range(len(data["index"]))
    )
    schema = pa.concat_tables([_table(p) for p in (dataset / "data").glob("*/*.parquet")]).schema
    for key, ft in info["features"].items():
        if ft["dtype"] == "video":
            assert ft["shape"][2] == 3 and ft["info"]["video.codec"] == "h264"
            assert ft["info"]["video.pix_fmt"] == "yuv420p" and ft["info"]["video.fps"] == FPS
            continue
        typ = schema.field(key).type
        if ft["shape"] == [1]:  # LeRobot reads shape [1] as a scalar column
            assert not pa.types.is_list(typ) and not pa.types.is_fixed_size_list(typ), key
        else:
            assert pa.types.is_fixed_size_list(typ) and typ.list_size == ft["shape"][0] == len(
                ft["names"]
            ), key
    assert set(schema.names) == {k for k, f in info["features"].items() if f["dtype"] != "video"}
    tasks = pd.read_parquet(dataset / "meta" / "tasks.parquet")
    texts = [_instruction(episodes["a"]), _instruction(episodes["b"])]
    assert (
        tasks.index.name == "task"
        and list(tasks.index) == texts
        and list(tasks.task_index) == [0, 1]
    )
    eps = _table(dataset / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    assert [e["dataset_from_index"] for e in eps] == [0, eps[0]["dataset_to_index"]]
    assert eps[-1]["dataset_to_index"] == info["total_frames"]
    for e, text in zip(eps, texts, strict=True):
        assert e["length"] == e["dataset_to_index"] - e["dataset_from_index"] and e["tasks"] == [
            text
        ]
        for cam in ("head", "wrist"):
            k = f"videos/observation.images.{cam}"
            assert e[f"{k}/to_timestamp"] - e[f"{k}/from_timestamp"] == pytest.approx(
                e["length"] / FPS
            )
    assert eps[1]["videos/observation.images.head/from_timestamp"] == pytest.approx(
        eps[0]["length"] / FPS
    )
    assert not list(dataset.parent.glob(".ds.partial-*"))


def test_frames_hold_the_bag_samples_at_the_stated_rate(
    dataset: Path, episodes: dict[str, Path]
) -> None:
    data = _data(dataset)
    eps = _table(dataset / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    for e, name in zip(eps, ("a", "b"), strict=True):
        rows = slice(e["dataset_from_index"], e["dataset_to_index"])
        ts = data["timestamp"][rows]
        assert np.allclose(ts, np.arange(e["length"]) / FPS, atol=1e-6)  # the fixed rate, from 0
        t_abs = e["captain/start_time_ns"] + np.round(ts.astype(np.float64) * 1e9).astype(np.int64)
        bag = episodes[name] / "bag"
        js = [(t, m) for _, t, m in read_messages(bag, ["/joint_states"])]
        times = [t for t, _ in js]
        for k, t in enumerate(t_abs):
            m = js[_held(times, int(t))][1]
            assert np.allclose(data["observation.state"][rows][k], m.position[:6], atol=1e-6)
            assert data["observation.gripper"][rows][k] == pytest.approx(m.position[6], abs=1e-6)
            assert 0 <= data["captain.sample_age_s"][rows][k][0] <= (t - times[0]) / 1e9 + 1e-6
        state = np.column_stack(
            [np.stack(list(data["observation.state"][rows])), data["observation.gripper"][rows]]
        )
        assert np.allclose(
            np.stack(list(data["action"][rows]))[:-1], state[1:]
        )  # the motion that followed
        # an in-process bag has no /captain/joint_commands: action is the next state, and says so
        assert e["captain/action"] == "next_state"
        assert not any(data["captain.action_commanded"][rows])
        assert np.array_equal(
            np.stack(list(data["captain.next_state"][rows])), np.stack(list(data["action"][rows]))
        )
        summary = json.loads((episodes[name] / "summary.json").read_text())
        assert (
            e["captain/outcome"] == summary["outcome"]
            and e["captain/host_success"] == summary["host_success"]
        )
        assert list(data["next.success"][rows]) == [False] * (e["length"] - 1) + [
            summary["host_success"]
        ]
        # every receipt once, in the frame whose interval it ended in
        lines = [x for s in data["captain.receipts"][rows] for x in str(s).splitlines()]
        receipts = [m for _, _, m in read_messages(bag, ["/captain/receipts"])]
        assert lines == [f"{m.capability}: {m.receipt}" for m in receipts]
        reqs = data["captain.request_index"][rows]
        assert list(reqs) == sorted(reqs) and reqs[0] >= 1 and reqs[-1] <= summary["requests"]
        # the request running at a frame: it ended at or after the frame (its record's bag time)
        ends = [
            t
            for _, t, m in read_messages(bag, ["/captain/trajectory"])
            if '"type": "request"' in m.data
        ]
        for r, t in zip(reqs, t_abs, strict=True):
            assert ends[r - 1] >= t and (r == 1 or ends[r - 2] < t)


def test_videos_are_the_held_bag_images(dataset: Path, episodes: dict[str, Path]) -> None:
    import av

    eps = _table(dataset / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    for cam in ("head", "wrist"):
        path = dataset / "videos" / f"observation.images.{cam}" / "chunk-000" / "file-000.mp4"
        with av.open(str(path)) as c:
            s = c.streams.video[0]
            decoded = [
                (float(f.pts or 0) * float(f.time_base or 0), f.to_ndarray(format="rgb24"))
                for f in c.decode(s)
            ]
        assert len(decoded) == sum(e["length"] for e in eps)
        assert np.allclose([t for t, _ in decoded], np.arange(len(decoded)) / FPS)
        k = 0
        for e, name in zip(eps, ("a", "b"), strict=True):
            imgs = [
                (t, m)
                for _, t, m in read_messages(episodes[name] / "bag", [f"/camera/{cam}/image_raw"])
            ]
            times = [t for t, _ in imgs]
            for i in range(e["length"]):
                m = imgs[_held(times, e["captain/start_time_ns"] + round(i * 1e9 / FPS))][1]
                want = np.asarray(m.data, np.uint8).reshape(m.height, m.width, 3).astype(float)
                assert np.abs(decoded[k][1].astype(float) - want).mean() < 4.0  # H.264 at CRF 23
                k += 1


def test_stats_are_computed_over_the_data(dataset: Path) -> None:
    stats = json.loads((dataset / "meta" / "stats.json").read_text())
    data = _data(dataset)
    for key in ("observation.state", "action", "observation.ee_pose"):
        x = np.stack(list(data[key])).astype(np.float64)
        assert np.allclose(stats[key]["min"], x.min(0)) and np.allclose(stats[key]["max"], x.max(0))
        assert np.allclose(stats[key]["mean"], x.mean(0), atol=1e-6)
        assert np.allclose(
            stats[key]["std"], x.std(0), atol=1e-5
        )  # the pooled per-episode variance
        assert stats[key]["count"] == [len(x)] and {"q01", "q50", "q99"} <= set(stats[key])
    head = stats["observation.images.head"]
    assert np.array(head["mean"]).shape == (3, 1, 1) and 0 < np.array(head["mean"]).min() < 1
    assert "captain.code" not in stats  # strings have no stats


def test_requests_and_code_keep_the_whole_record(dataset: Path, episodes: dict[str, Path]) -> None:
    reqs = _table(dataset / "meta" / "captain_ros" / "requests.parquet").to_pylist()
    data = _data(dataset)
    for k, name in enumerate(("a", "b")):
        lines = [
            json.loads(x) for x in (episodes[name] / "trajectory.jsonl").read_text().splitlines()
        ]
        recorded = [r for r in lines if r["type"] == "request"]
        mine = [r for r in reqs if r["episode_index"] == k]
        assert [r["request_index"] for r in mine] == [r["t"] for r in recorded]
        assert [json.loads(r["record_json"]) for r in mine] == json.loads(json.dumps(recorded))
        codes = {r["request_index"]: r["code"] for r in mine}
        rows = data["episode_index"] == k
        for ri, code in zip(
            data["captain.request_index"][rows], data["captain.code"][rows], strict=True
        ):
            assert code == codes[ri]


def test_a_bag_exports_like_its_episode_folder(episodes: dict[str, Path], tmp_path: Path) -> None:
    a, b = tmp_path / "from_folder", tmp_path / "from_bag"
    assert main(["bag", "export", "--out", str(a), "--cameras", "none", str(episodes["a"])]) == 0
    assert (
        main(["bag", "export", "--out", str(b), "--cameras", "none", str(episodes["a"] / "bag")])
        == 0
    )
    da, db = _data(a), _data(b)
    assert da.keys() == db.keys()
    for key in da:
        assert [repr(x) for x in da[key]] == [repr(x) for x in db[key]], key
    assert not (a / "videos").exists()
    assert json.loads((a / "meta" / "info.json").read_text())["video_path"] is None


def _fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_bad_input_gets_one_line_and_leaves_nothing(
    episodes: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ds"
    broken = tmp_path / "broken_bag"
    shutil.copytree(episodes["a"] / "bag", broken)
    (broken / "metadata.yaml").unlink()  # what a killed recorder leaves
    assert "truncated bag" in _fails(capsys, "bag", "export", "--out", str(out), str(broken))
    err = _fails(capsys, "bag", "export", "--out", str(out), "--cameras", "top", str(episodes["a"]))
    assert "no /camera/top/image_raw" in err and "head, wrist" in err
    err = _fails(
        capsys, "bag", "export", "--out", str(out), str(episodes["a"]), str(episodes["fake"])
    )
    assert "mixed robots" in err and "joint1" in err and "'x'" in err
    assert "no such file" in _fails(
        capsys, "bag", "export", "--out", str(out), str(tmp_path / "nope")
    )
    assert not out.exists() and not list(tmp_path.glob(".ds.*"))
    assert main(["bag", "export", "--out", str(out), "--cameras", "none", str(episodes["a"])]) == 0
    assert "exists" in _fails(capsys, "bag", "export", "--out", str(out), str(episodes["b"]))
    assert (
        main(
            [
                "bag",
                "export",
                "--out",
                str(out),
                "--overwrite",
                "--cameras",
                "none",
                str(episodes["b"]),
            ]
        )
        == 0
    )
    eps = _table(out / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    assert eps[0]["captain/seed"] == 2


def test_a_killed_export_never_looks_complete(episodes: dict[str, Path], tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from captain_ros.bags.lerobot import video
        from captain_ros.bags.lerobot import expand, export_lerobot, read_source
        real = video.VideoFile.add
        def add(self, rgb):
            real(self, rgb)
            if self.frames == 5:
                os._exit(9)  # killed in the middle of encoding
        video.VideoFile.add = add
        eps = [e for p in expand({str(episodes["a"])!r}) for e in read_source(p)]
        export_lerobot(eps, Path({str(tmp_path / "ds")!r}))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 9, proc.stderr
    assert not (tmp_path / "ds").exists()
    (partial,) = tmp_path.glob(".ds.partial-*")
    assert not (partial / "meta" / "info.json").exists()


def test_bag_info_lists_episodes_and_requests(
    episodes: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bag = episodes["a"] / "bag"
    summary = json.loads((episodes["a"] / "summary.json").read_text())
    capsys.readouterr()
    assert main(["bag", "info", "--json", str(bag)]) == 0
    (ep,) = json.loads(capsys.readouterr().out)["episodes"]
    assert (ep["task"], ep["seed"], ep["outcome"]) == ("pick_place", 1, summary["outcome"])
    assert len(ep["requests"]) == summary["requests"]
    assert sum(r["calls"] for r in ep["requests"]) == summary["robot_calls"]
    assert main(["bag", "info", str(bag)]) == 0
    text = capsys.readouterr().out
    assert "episode pick_place_1: pick_place seed 1 (mujoco, scripted)" in text
    assert "request 1:" in text and "finish" in text.splitlines()[-1]


def test_lerobot_reads_the_dataset(
    dataset: Path, episodes: dict[str, Path], tmp_path: Path
) -> None:
    """LeRobot's own LeRobotDataset, in its own environment, returns our frames, tasks and images."""
    python = os.environ.get("CAPTAIN_LEROBOT_PYTHON", "")
    if not python or not Path(python).is_file():
        pytest.skip(
            "LeRobot's environment is not built here (scripts/lerobot_env.sh; CAPTAIN_LEROBOT_PYTHON)"
        )
    out = tmp_path / "lerobot.json"
    proc = subprocess.run(
        [python, str(ROOT / "scripts" / "lerobot_read.py"), str(dataset), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(out.read_text())
    data = _data(dataset)
    assert (
        got["num_frames"] == len(data["index"]) and got["num_episodes"] == 2 and got["fps"] == FPS
    )
    frames = got["frames"]
    assert np.allclose(
        [f["observation.state"] for f in frames], np.stack(list(data["observation.state"]))
    )
    assert np.allclose([f["action"] for f in frames], np.stack(list(data["action"])))
    assert [f["task"] for f in frames] == [
        _instruction(episodes["ab"[k]]) for k in data["episode_index"]
    ]
    ours = json.loads((dataset / "meta" / "stats.json").read_text())
    assert np.allclose(got["stats"]["observation.state"]["mean"], ours["observation.state"]["mean"])
    eps = _table(dataset / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    for f in frames:  # the decoded image is the bag image the frame holds (8 x 8 thumbnails)
        e = eps[f["episode_index"]]
        t = e["captain/start_time_ns"] + round(f["timestamp"] * 1e9)
        bag = episodes["ab"[f["episode_index"]]] / "bag"
        imgs = [(ts, m) for _, ts, m in read_messages(bag, ["/camera/head/image_raw"])]
        m = imgs[_held([ts for ts, _ in imgs], t)][1]
        img = (
            np.asarray(m.data, np.uint8)
            .reshape(m.height, m.width, 3)
            .astype(float)
            .transpose(2, 0, 1)
        )
        want = img.reshape(3, 8, m.height // 8, 8, m.width // 8).mean((2, 4))
        assert np.abs(np.array(f["observation.images.head"]) - want).max() < 6.0


def test_the_shipped_foxglove_layout_shows_the_recorded_topics(
    episodes: dict[str, Path], tmp_path: Path
) -> None:
    from captain_ros.bags import foxglove
    from captain_ros.bags.rosbag2 import summarize_bag

    shipped = json.loads(foxglove.shipped_layout().read_text())
    assert shipped == foxglove.layout(
        foxglove.DEFAULT_ARMS, foxglove.DEFAULT_CAMERAS
    )  # the file is what the code builds
    recorded = set(summarize_bag(episodes["a"] / "bag").msgtypes)
    assert foxglove.topics_of(shipped) <= recorded, foxglove.topics_of(shipped) - recorded
    panels = set(shipped["configById"])

    def leaves(node: Any) -> set[str]:
        return {node} if isinstance(node, str) else leaves(node["first"]) | leaves(node["second"])

    assert leaves(shipped["layout"]) == panels  # every configured panel is placed, once
    js = next(m for _, _, m in read_messages(episodes["a"] / "bag", ["/joint_states"]))
    plot = shipped["configById"]["Plot!captain_gripper"]["paths"][0]
    assert plot["value"] == f"/joint_states.position[{list(js.name).index('arm_jaw_opening_m')}]"
    out = tmp_path / "fake_rig.json"  # another rig: its own joints in the plots
    assert main(["bag", "layout", str(episodes["fake"] / "bag"), "--out", str(out)]) == 0
    labels = [
        p["label"]
        for p in json.loads(out.read_text())["configById"]["Plot!captain_joints"]["paths"]
    ]
    assert labels == ["x", "y", "z", "roll", "pitch", "yaw"]
    assert main(["bag", "layout", "--out", str(tmp_path / "default.json")]) == 0
    assert json.loads((tmp_path / "default.json").read_text()) == shipped


def test_image_stats_from_histograms_equal_numpys() -> None:
    """The video stats (from per-channel histograms) are numpy's min/max/mean/std/quantiles."""
    from captain_ros.bags.lerobot.stats import feature_stats, image_stats

    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (300, 400, 3), dtype=np.uint8) for _ in range(4)]
    frames[1][:] = 7  # a flat frame: ties and a skewed histogram
    got = image_stats(frames)
    x = np.stack([f[::2, ::2] for f in frames]).astype(np.float64).transpose(0, 3, 1, 2) / 255.0
    want = feature_stats(x, axis=(0, 2, 3), keepdims=True)
    for key, value in got.items():
        if key != "count":
            assert value.shape == (3, 1, 1) and np.allclose(value, want[key][0], atol=1e-12), key
    assert got["count"].tolist() == [4]


def test_an_emulated_piper_episode_joins_the_simulated_ones(
    episodes: dict[str, Path], tmp_path: Path
) -> None:
    """The PiPER through its CAN emulator is the same robot as the MuJoCo PiPER: one dataset holds
    both (the hardware path's bag, sim-to-real data side by side), each episode naming its backend."""
    from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.episode import run_one

    folder = tmp_path / "piper"
    run_one(
        EpisodeConfig(
            "pick_place",
            1,
            str(folder),
            backend=BackendConfig("piper", {"emulate": True}),
            recording=RecordingConfig(report=False),
        )
    )
    out = tmp_path / "ds"
    assert main(["bag", "export", "--out", str(out), str(episodes["a"]), str(folder)]) == 0
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["robot_type"] == "mujoco+piper" and info["total_episodes"] == 2
    eps = _table(out / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    assert [e["captain/backend"] for e in eps] == ["mujoco", "piper"]
    data = _data(out)
    rows = data["episode_index"] == 1
    js = [(t, m) for _, t, m in read_messages(folder / "bag", ["/joint_states"])]
    t_last = eps[1]["captain/start_time_ns"] + round(float(data["timestamp"][rows][-1]) * 1e9)
    held = js[_held([t for t, _ in js], t_last)][1]  # the sample the last frame holds
    assert np.allclose(
        np.stack(list(data["observation.state"][rows]))[-1], held.position[:6], atol=1e-6
    )


def test_a_bag_of_two_episodes_splits_like_their_own_bags(
    episodes: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One continuous recording over two episodes (both bags' messages in one bag, as a manual
    `ros2 bag record` would hold them) exports as the two episodes of their own bags."""
    from rosbags.rosbag2 import Reader

    from captain_ros.bags.rosbag2 import BagWriter

    both = tmp_path / "both"
    writer = BagWriter(both)
    for name in ("a", "b"):
        with Reader(episodes[name] / "bag") as r:
            for conn, t, raw in r.messages():
                if not writer.has_topic(conn.topic):
                    writer.add_topic(conn.topic, conn.msgtype)
                writer.write(conn.topic, t, raw)
    writer.close()
    one, two = tmp_path / "one", tmp_path / "two"
    bags = [str(episodes[n] / "bag") for n in ("a", "b")]
    assert main(["bag", "export", "--out", str(one), "--cameras", "none", str(both)]) == 0
    assert main(["bag", "export", "--out", str(two), "--cameras", "none", *bags]) == 0
    d1, d2 = _data(one), _data(two)
    for key in d1:
        assert [repr(x) for x in d1[key]] == [repr(x) for x in d2[key]], key
    capsys.readouterr()
    assert main(["bag", "info", "--json", str(both)]) == 0
    assert [e["seed"] for e in json.loads(capsys.readouterr().out)["episodes"]] == [1, 2]
