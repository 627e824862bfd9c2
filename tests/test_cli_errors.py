"""Bad input to the CLI: one clear line on stderr, a non-zero exit, no traceback, nothing left
behind; --debug shows the traceback; every subcommand is listed in `captain --help`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CAPTAIN = [sys.executable, "-m", "captain_ros.cli.main"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MUJOCO_GL": "egl"}
    return subprocess.run(
        [*CAPTAIN, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli")
    bad = d / "bad.jsonl"
    bad.write_text('{"code": "x = 1"}\nthis is not json\n')
    full = d / "full"
    full.mkdir()
    (full / "summary.json").write_text("{}")
    ro = d / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    empty = d / "empty"
    empty.mkdir()
    corrupt = d / "corrupt"
    corrupt.mkdir()
    (corrupt / "summary.json").write_text('{"task": "pick_place", "seed"')
    truncated, _ = _truncated_bag(d / "truncated_bag")
    return {
        "dir": d,
        "bad": bad,
        "full": full,
        "ro": ro,
        "empty": empty,
        "corrupt": corrupt,
        "truncated": truncated,
    }


def _truncated_bag(path: Path) -> tuple[Path, int]:
    """A closed bag (metadata.yaml written) whose .mcap is then cut inside its second chunk, as
    an interrupted copy leaves it; returns it and the messages of its first, complete chunk."""
    from rosbags.typesys import Stores, get_typestore

    from captain_ros.bags.rosbag2 import BagWriter

    store = get_typestore(Stores.ROS2_HUMBLE)
    w = BagWriter(path, store)
    w.add_topic("/chatter", "std_msgs/msg/String")
    msg = store.types["std_msgs/msg/String"]
    for chunk in range(2):
        for i in range(10):
            w.write_msg(
                "/chatter",
                (chunk * 10 + i + 1) * 1000,
                msg(data=f"m{chunk}-{i}" * 20),
                "std_msgs/msg/String",
            )
        w.flush()
        if chunk == 0:
            (mcap,) = path.glob("*.mcap")
            first_chunk_end = mcap.stat().st_size
    w.close()
    assert (path / "metadata.yaml").exists()
    with mcap.open("r+b") as f:
        f.truncate(first_chunk_end + 40)
    return path, 10


CASES = [
    (["run", "--task", "nosuch"], "unknown task 'nosuch'; valid:"),
    (["run", "--seed", "-5"], "seed must be a non-negative int"),
    (["run", "--policy", "nosuchpolicy"], "unknown policy 'nosuchpolicy'; valid:"),
    (
        ["run", "--policy", "replay:/nonexistent/requests.jsonl"],
        "No such file or directory: /nonexistent",
    ),
    (["run", "--policy", "replay:{bad}"], "bad.jsonl:2: not JSON"),
    (["run", "--backend", "fake", "--out", "{ro}/ep"], "cannot write to"),
    (["run", "--backend", "fake", "--max-requests", "1", "--out", "{full}"], "is not empty"),
    (["eval", "--seeds", "5-1", "--check"], "seed range '5-1' is empty"),
    (["eval", "--task", "juggle", "--check"], "unknown task 'juggle'"),
    (["compare", "{dir}/nope_a", "{dir}/nope_b"], "No such file or directory"),
    (["bag", "info", "{dir}/nobag"], "is not a bag folder"),
    (["report", "{dir}/noepisode"], "noepisode"),
    (["up", "--task", "nosuch"], "unknown task 'nosuch'"),
    # empty or corrupt inputs, and arguments that would be ignored (issue 32)
    (["compare", "{empty}", "{empty}"], "holds no episodes (no eval.json, no */summary.json)"),
    (["report", "{empty}"], "holds no episode (no summary.json, no trajectory.jsonl)"),
    (["report", "{corrupt}"], "summary.json is corrupt"),
    (["run", "--backend", "fake", "--emulate"], "--emulate does not apply to --backend fake"),
    (["run", "--backend", "ros_arm", "--can", "can0"], "--can does not apply to --backend ros_arm"),
    (["eval", "--workers", "0", "--check", "--seeds", "1-2"], "workers must be an integer >= 1"),
    (["bag", "info", "{truncated}"], "the bag cannot be read"),
    # the shipped student on a task it was never trained on
    (
        ["run", "--policy", "student", "--backend", "robosuite", "--task", "lift"],
        "not on robosuite_lift",
    ),
    (
        ["eval", "--policy", "student", "--backend", "robosuite", "--task", "lift", "--check"],
        "not on robosuite_lift",
    ),
]


@pytest.mark.parametrize("args, message", CASES, ids=[" ".join(a[:3]) for a, _ in CASES])
def test_bad_input_is_one_line_and_a_nonzero_exit(
    files: dict[str, Path], args: list[str], message: str
) -> None:
    if os.geteuid() == 0 and "{ro}" in " ".join(args):
        # root ignores directory permissions: make the parent a file instead (still unwritable)
        args = [a.replace("{ro}/ep", "{bad}/ep") for a in args]
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    before = sorted(p.name for p in files["dir"].iterdir())
    proc = _run(*argv, cwd=files["dir"])
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stdout[-1500:] + proc.stderr[-1500:]
    assert len(err) == 1 and err[0].startswith(f"captain {argv[0]}: "), proc.stderr
    assert message in err[0] or ("cannot write to" in message and "Not a directory" in err[0])
    assert "Traceback" not in proc.stderr + proc.stdout
    assert sorted(p.name for p in files["dir"].iterdir()) == before  # no folder left behind


def test_bag_recover_rewrites_a_truncated_closed_bag(tmp_path: Path) -> None:
    bag, complete = _truncated_bag(tmp_path / "bag")
    proc = _run("bag", "recover", str(bag), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.strip() == f"{bag}: recovered; {complete} messages on 1 topics"
    proc = _run("bag", "info", str(bag), "--json", "--no-episodes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert json.loads(proc.stdout)["topics"][0]["count"] == complete
    proc = _run("bag", "recover", str(bag), cwd=tmp_path)  # now it opens: left as it is
    assert proc.returncode == 0 and "was already closed" in proc.stdout


def test_debug_shows_the_traceback(files: dict[str, Path]) -> None:
    proc = _run("run", "--task", "nosuch", "--debug", cwd=files["dir"])
    assert proc.returncode != 0 and "Traceback" in proc.stderr and "UnknownNameError" in proc.stderr


def test_overwrite_replaces_a_non_empty_out(files: dict[str, Path]) -> None:
    replay = files["dir"] / "one.jsonl"
    replay.write_text(json.dumps({"code": "x = 1"}) + "\n")
    out = files["dir"] / "again"
    for flags in ([], ["--overwrite"]):
        proc = _run(
            "run",
            "--backend",
            "fake",
            "--policy",
            f"replay:{replay}",
            "--no-bag",
            "--out",
            str(out),
            *flags,
            cwd=files["dir"],
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    proc = _run(
        "run",
        "--backend",
        "fake",
        "--policy",
        f"replay:{replay}",
        "--no-bag",
        "--out",
        str(out),
        cwd=files["dir"],
    )
    assert proc.returncode == 2 and "is not empty" in proc.stderr and "--overwrite" in proc.stderr


def test_help_lists_every_subcommand(files: dict[str, Path]) -> None:
    proc = _run("--help", cwd=files["dir"])
    assert proc.returncode == 0
    for name in ("run", "eval", "compare", "report", "bag", "hw", "up", "coevolve", "learn"):
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith(name + " ")]
        assert lines, f"{name} is not listed in captain --help"
