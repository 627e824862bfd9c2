"""Issue 34 item 4: `captain learn dataset` on the bags of a real `ros2 launch` run gives the rows
of the same episodes' folders.

The graph (``backend:=mujoco``, recorder on, the policy node's ``profile: student`` from the params
file) runs two pick_place goals of the scripted expert through `ros2 action send_goal`. One dataset
is built from the recorder's two bags, one from the goals' two episode folders, and the rows must
be equal field by field: messages, tools, weights, request indices, context hashes, task, seed,
outcome, profile and split. Only where a row came from may differ: ``source`` (the bag path and
episode index against the folder path) and the ids derived from it (``episode_id``, ``id``: a hash
of the source, so the same episode read twice stays two episodes in ``stats.json``). One build from
both inputs keeps every row once (the bag's rows are duplicates of the folder's).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ros_cli import RosCli, cli_env, goal, require_ros2_cli
from ros_fixtures import STATE_DIR, _next_domain
from test_ros_launch_rigs import SEND_GOAL, result_fields

from captain_ros.core.share import share_path
from captain_ros.learn.data import build_dataset

pytestmark = [pytest.mark.ros, pytest.mark.slow]
SEEDS = (1, 2)
SOURCE_FIELDS = ("source", "episode_id", "id")  # where a row came from: differs by construction


@pytest.fixture(scope="module")
def launched_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[list[Path], list[Path]]]:
    """(the recorder's bags, the episode folders) of two student-profile expert goals."""
    require_ros2_cli()
    tmp = tmp_path_factory.mktemp("launch_dataset")
    params = yaml.safe_load(share_path("config", "captain.yaml").read_text())
    params["captain_policy"]["ros__parameters"]["profile"] = "student"
    params_file = tmp / "params.yaml"
    params_file.write_text(yaml.safe_dump(params))
    domain = _next_domain()
    cli = RosCli(cli_env(domain), tmp)
    proc = cli.start(
        "launch", "captain_ros", "captain.launch.py", "backend:=mujoco", "task:=pick_place",
        f"params_file:={params_file}", f"bag_dir:={tmp / 'bags'}", f"allowed_root:={tmp}",
        log=STATE_DIR / "children" / f"launch-dataset-{domain}.log",
    )  # fmt: skip
    started = time.monotonic()
    try:
        cli.wait_for("action", "/captain/run_episode", 240.0, proc)
        bags, folders = [], []
        for seed in SEEDS:
            folder = tmp / f"ep_{seed}"
            res = cli.run(*SEND_GOAL, goal(task="pick_place", seed=seed, output_dir=str(folder)),
                          timeout_s=600.0)  # fmt: skip
            assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-3000:]
            fields = result_fields(res.stdout)
            assert fields["bag_status"] == "complete", fields  # the policy node waited for it
            bags.append(Path(fields["bag_path"]))
            folders.append(folder)
        print(f"launch + {len(SEEDS)} goals: {time.monotonic() - started:.1f} s")
        yield bags, folders
    finally:
        cli.stop_all()


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for split in ("train", "validation")
            for line in (out / f"{split}.jsonl").read_text().splitlines()]  # fmt: skip


def test_launch_bags_give_the_rows_of_the_episode_folders(
    launched_run: tuple[list[Path], list[Path]], tmp_path: Path
) -> None:
    bags, folders = launched_run
    assert len(set(bags)) == len(SEEDS), bags  # one bag per episode
    assert all(b.parent == bags[0].parent for b in bags)
    t0 = time.perf_counter()
    from_bags = build_dataset([bags[0].parent], tmp_path / "bags", outcomes="all")  # the bag_dir
    t1 = time.perf_counter()
    from_folders = build_dataset(folders, tmp_path / "folders", outcomes="all")
    t2 = time.perf_counter()
    print(f"dataset from bags {t1 - t0:.2f} s, from folders {t2 - t1:.2f} s")
    assert not from_bags.skipped and not from_folders.skipped, (
        from_bags.skipped,
        from_folders.skipped,
    )
    assert from_bags.episodes == from_folders.episodes == len(SEEDS)
    a, b = _rows(tmp_path / "bags"), _rows(tmp_path / "folders")
    assert a and len(a) == len(b)
    key = lambda r: (r["seed"], r["id"].rsplit(":", 1)[1])  # noqa: E731 - episode, row within it
    a, b = sorted(a, key=key), sorted(b, key=key)
    for ra, rb in zip(a, b, strict=True):
        for f in sorted(set(ra) | set(rb)):
            if f not in SOURCE_FIELDS:
                assert ra.get(f) == rb.get(f), f"seed {ra['seed']}: field {f} differs"
        assert "#" in ra["source"] and Path(ra["source"].split("#")[0]) in bags
        assert Path(rb["source"]) in folders
    # the rows are the student profile's and really supervise the expert's turns
    assert {r["profile"] for r in a} == {"student"}
    assert {r["seed"] for r in a} == set(SEEDS)
    labelled = [w for r in a for w in r["weights"] if w > 0]
    assert len(labelled) >= 2 * len(SEEDS)
    assert all(r["messages"][0]["role"] == "system" for r in a)
    for ep in folders:
        summary = json.loads((ep / "summary.json").read_text())
        assert {r["outcome"] for r in a if r["source"].startswith(summary["bag_path"])} == {
            summary["outcome"]
        }
    # the report is the same figures either way
    for field in ("rows", "tokens", "outcomes", "median_physical_actions", "profile", "duplicates"):
        assert getattr(from_bags, field) == getattr(from_folders, field), field
    # one build from both: every bag row is a duplicate of a folder row and is kept once
    both = build_dataset([*folders, bags[0].parent], tmp_path / "both", outcomes="all")
    assert both.duplicates == len(a) and sum(both.rows.values()) == len(b)


def test_the_lerobot_action_is_what_the_robot_node_commanded(
    launched_run: tuple[list[Path], list[Path]], tmp_path: Path
) -> None:
    """The launch's bags carry /captain/joint_commands (every control tick's applied joint targets
    and every jaw command); the export's ``action`` holds them at the frame rate."""
    import numpy as np
    import pyarrow.parquet as pq

    from captain_ros.bags.messages import COMMAND_TOPIC
    from captain_ros.bags.rosbag2 import read_messages
    from captain_ros.cli.main import main

    bags, _folders = launched_run
    out = tmp_path / "ds"
    assert main(["bag", "export", "--cameras", "none", "--out", str(out), *map(str, bags)]) == 0
    data = pq.read_table(str(out / "data" / "chunk-000" / "file-000.parquet")).to_pydict()
    eps = pq.read_table(
        str(out / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    ).to_pylist()
    assert [e["captain/action"] for e in eps] == ["commanded"] * len(bags)
    for e, bag in zip(eps, sorted(bags, key=str), strict=True):
        assert e["captain/source"] == str(bag)
        cmds = [(t, m) for _, t, m in read_messages(bag, [COMMAND_TOPIC])]
        joints = [m for _, _, m in read_messages(bag, ["/joint_states"])]
        assert len(cmds) > 10 * e["captain/requests"], len(cmds)  # control ticks, not calls
        assert list(cmds[0][1].name) == list(joints[0].name)  # the joints, then the jaw
        rows = slice(e["dataset_from_index"], e["dataset_to_index"])
        action = np.array(data["action"][rows])
        nxt = np.array(data["captain.next_state"][rows])
        commanded = np.array(data["captain.action_commanded"][rows])
        state = np.column_stack(
            [np.array(data["observation.state"][rows]), data["observation.gripper"][rows]]
        )
        t_abs = e["captain/start_time_ns"] + np.round(
            np.array(data["timestamp"][rows], np.float64) * 1e9
        ).astype(np.int64)
        times = np.array([t for t, _ in cmds])
        for k, t in enumerate(t_abs):
            i = int(np.searchsorted(times, t, side="right")) - 1
            assert commanded[k] == (i >= 0)
            want = np.array(cmds[i][1].position) if i >= 0 else state[k]
            assert np.allclose(action[k], want, atol=1e-6), (k, action[k], want)
        # the expert's first motion comes after a few perception requests (how long they take
        # depends on the machine's load: 41-60 % of the frames carry a command); from the first
        # command on, every frame does
        first = int(np.argmax(commanded))
        assert commanded[first:].all() and commanded.sum() >= 10, commanded
        # the commands lead the motion: the next measured state follows them within the tracking
        # error, while the jaw command closes further than the cube lets the jaw (a grasp)
        moving = commanded & (
            np.abs(np.diff(state[:, :6], axis=0, append=state[-1:, :6])).max(1) > 1e-3
        )
        # (median 0.04-0.054 rad on the 2-core VM, with load; a misaligned action is 0.3-0.6)
        assert np.median(np.abs(action[moving, :6] - nxt[moving, :6])) < 0.08
        assert not np.allclose(action[commanded], nxt[commanded], atol=1e-4)
        # the cube holds the jaw open (standing still) while the command says shut: on those
        # frames the next state is the jaw's own opening, the command is not
        jaw = state[:, 6]
        still = np.abs(np.diff(jaw, append=jaw[-1])) < 1e-4
        held = still & (jaw - action[:, 6] > 0.005)
        # (206 and 189 such frames on an idle machine; 9 under CI load, where the bag's state
        # samples thin out: the check is that they exist)
        assert held.sum() >= 3, (
            f"{held.sum()} frames where the cube held the jaw open against its command"
        )
