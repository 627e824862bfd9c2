"""Issue 32 item 2: the secured graph (``secure:=true key_file:=KEY``) through the real `ros2 launch`.

SROS2 is impossible with the wheels in the lock (no Fast DDS security plugins; docs/ros.md), so
the graph checks application-layer credentials (:mod:`captain_ros.ros.credential`). A process
without the key (the real ``ros2`` CLI, an rclpy node) cannot reset the e-stop, send a goal, make
a robot call (even after setting the robot's ``active_episode`` itself) or reach the plain
snapshot/restore/load_scene services; ``captain ros`` with a wrong key is refused too; with the
key, ``captain ros estop-reset`` releases the latch and ``captain ros goal`` runs an episode whose
robot calls, scene load and snapshots are all signed. The credential rules themselves (replay,
staleness, tampering, the key file's mode) are checked without a graph.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ros_cli import RosCli, cli_env, goal, require_ros2_cli
from ros_fixtures import STATE_DIR, Spinner, wait_until

from captain_ros.ros.credential import (
    CredentialError,
    Signer,
    Verifier,
    generate_key,
    goal_fields,
    load_key,
)

GOAL = {
    "task": "pick_place",
    "seed": 3,
    "policy": "",
    "max_requests": 3,
    "max_physical_actions": 0,
    "max_wall_time_s": 0.0,
    "output_dir": "/x",
}


def test_key_file_rules(tmp_path: Path) -> None:
    key = generate_key(tmp_path / "k")
    assert (key.stat().st_mode & 0o777) == 0o600 and len(load_key(key)) == 64
    with pytest.raises(FileExistsError):
        generate_key(key)  # never overwritten
    loose = tmp_path / "loose"
    loose.write_text("x" * 64)
    loose.chmod(0o644)
    with pytest.raises(CredentialError, match="mode 0644: others can read it"):
        load_key(loose)
    short = tmp_path / "short"
    short.write_text("x" * 10)
    short.chmod(0o600)
    with pytest.raises(CredentialError, match="at least 32"):
        load_key(short)
    with pytest.raises(CredentialError, match="No such file"):
        load_key(tmp_path / "missing")


def test_credentials_bind_the_request_once_and_while_fresh() -> None:
    now = [1_000_000.0]
    key = b"k" * 32
    signer, verifier = Signer(key, clock=lambda: now[0]), Verifier(key, clock=lambda: now[0])
    fields = {
        "capability": "move_to",
        "kwargs_json": '{"x": 0.3}',
        "episode_id": "e",
        "request_index": 2,
    }
    token = signer.token("call", fields)
    assert verifier.check("call", fields, token) is None
    assert "replay" in str(verifier.check("call", fields, token))
    forged = Signer(b"other key, 32 bytes long.........").token("call", fields)
    assert "wrong credential" in str(verifier.check("call", fields, forged))
    moved = signer.token("call", fields)
    assert "wrong credential" in str(
        verifier.check("call", {**fields, "kwargs_json": '{"x": 9}'}, moved)
    )
    assert "wrong credential" in str(verifier.check("estop_reset", fields, moved))  # another op
    assert verifier.check("call", fields, None) == "no credential"
    assert verifier.check("call", fields, {"ts": "x"}) == "a malformed credential"
    stale = signer.token("call", fields)
    now[0] += 31.0
    assert "off" in str(verifier.check("call", fields, stale))
    # goals: the credential is the goal id; changing any bound field breaks it
    uuid = signer.goal_uuid(GOAL)
    assert len(uuid) == 16 and goal_fields(GOAL) == GOAL
    assert "no valid credential" in str(verifier.check_goal({**GOAL, "seed": 4}, uuid))
    assert verifier.check_goal(GOAL, uuid) is None
    assert "replay" in str(verifier.check_goal(GOAL, uuid))
    assert "no valid credential" in str(verifier.check_goal(GOAL, os.urandom(16)))


class SecuredGraph:
    def __init__(self, cli: RosCli, proc: Any, tmp: Path, key: Path) -> None:
        import rclpy
        from rclpy.node import Node
        from std_msgs.msg import Bool

        from captain_ros.ros.estop import LATCHED_QOS

        self.cli, self.proc, self.tmp, self.key = cli, proc, tmp, key
        self.domain = int(cli.env["ROS_DOMAIN_ID"])
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx, domain_id=self.domain)
        self.node = Node("no_key", context=self.ctx)  # a process on the domain without the key
        self.latched: list[bool] = []
        self.changed = threading.Event()
        self.node.create_subscription(Bool, "/captain/estop/state", self._on_state, LATCHED_QOS)
        self.spinner = Spinner(self.ctx)
        self.spinner.add(self.node)

    def _on_state(self, msg: Any) -> None:
        self.latched.append(bool(msg.data))
        self.changed.set()

    def trigger(self, name: str) -> Any:
        from std_srvs.srv import Trigger

        from captain_ros.ros.calls import call_sync

        client: Any = self.node.create_client(Trigger, f"/captain/estop/{name}")
        assert client.wait_for_service(timeout_sec=30.0), name
        resp = call_sync(client, Trigger.Request(), 30.0)
        assert resp is not None, f"/captain/estop/{name} did not answer"
        return resp

    def captain_ros(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "captain_ros.cli.main",
                "ros",
                *args,
                "--domain-id",
                str(self.domain),
            ],
            env=self.cli.env,
            cwd=self.tmp,
            capture_output=True,
            text=True,
            timeout=300,
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredGraph]:
    require_ros2_cli()
    tmp = tmp_path_factory.mktemp("secure")
    key = generate_key(tmp / "deploy.key")
    domain = 90 + os.getpid() % 10
    cli = RosCli(cli_env(domain), tmp)
    proc = cli.start(
        "launch",
        "captain_ros",
        "captain.launch.py",
        "backend:=fake",
        "secure:=true",
        f"key_file:={key}",
        f"bag_dir:={tmp / 'bags'}",
        f"allowed_root:={tmp}",
        log=STATE_DIR / "children" / f"secure-{domain}.log",
    )
    cli.wait_for("action", "/captain/run_episode", 240.0, proc)
    g = SecuredGraph(cli, proc, tmp, key)
    try:
        yield g
    finally:
        g.spinner.shutdown()
        g.node.destroy_node()
        g.ctx.try_shutdown()
        cli.stop_all()


@pytest.mark.ros
@pytest.mark.slow
def test_secured_graph_refuses_an_uncredentialed_estop_reset(secured: SecuredGraph) -> None:
    g = secured
    assert g.trigger("trigger").success  # stopping needs no credential
    wait_until(lambda: bool(g.latched) and g.latched[-1], 30.0, g.changed, what="the latch")
    resp = g.trigger("reset")
    assert not resp.success and "needs a credential" in resp.message, resp.message
    wrong = generate_key(g.tmp / "wrong.key")
    refused = g.captain_ros("estop-reset", "--key-file", str(wrong))
    assert refused.returncode == 1 and "wrong credential" in refused.stderr, refused.stderr
    assert g.latched[-1], "the latch was released without the key"
    ok = g.captain_ros("estop-reset", "--key-file", str(g.key))
    assert ok.returncode == 0 and "released" in ok.stdout, ok.stderr
    wait_until(lambda: not g.latched[-1], 30.0, g.changed, what="the release")


@pytest.mark.ros
@pytest.mark.slow
def test_secured_graph_refuses_uncredentialed_goals_calls_and_debug_services(
    secured: SecuredGraph,
) -> None:
    from captain_ros_interfaces.srv import LoadScene, RobotCall, Snapshot
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from captain_ros.ros.calls import call_sync

    g = secured
    # the real ros2 CLI, without the key: the goal is refused before anything runs
    res = g.cli.run(
        "action",
        "send_goal",
        "/captain/run_episode",
        "captain_ros_interfaces/action/RunEpisode",
        goal(task="pick_place", seed=3, max_requests=3, output_dir=str(g.tmp / "no_key")),
        timeout_s=120.0,
    )
    assert "Goal finished with status: ABORTED" in res.stdout, res.stdout[-2000:]
    assert "unauthenticated" in res.stdout and not (g.tmp / "no_key").exists()
    # a robot call from a process that opened the episode gate itself: refused, unsigned
    params = AsyncParameterClient(g.node, "captain_robot")
    assert params.wait_for_services(timeout_sec=30.0)
    done = threading.Event()
    fut = params.set_parameters([Parameter("active_episode", value="forged")])
    fut.add_done_callback(lambda _f: done.set())
    assert done.wait(10.0)
    call: Any = g.node.create_client(RobotCall, "/captain/robot/call")
    assert call.wait_for_service(timeout_sec=30.0)
    resp = call_sync(
        call,
        RobotCall.Request(
            capability="move_to",
            episode_id="forged",
            kwargs_json=json.dumps({"arm": "arm", "x": 0.3}),
        ),
        30.0,
    )
    assert resp is not None and not resp.success and "no credential" in resp.result_json
    # the world-changing services are not served in the open
    for srv, name in ((LoadScene, "load_scene"), (Snapshot, "snapshot")):
        client: Any = g.node.create_client(srv, f"/captain/robot/{name}")
        assert not client.wait_for_service(timeout_sec=2.0), name
    # with the key: an episode whose calls, scene load and snapshots are signed
    ok = g.captain_ros(
        "goal",
        "--key-file",
        str(g.key),
        "--task",
        "pick_place",
        "--seed",
        "3",
        "--max-requests",
        "3",
        "--quiet",
        "--output-dir",
        str(g.tmp / "with_key"),
    )
    assert ok.returncode == 0, ok.stderr
    result = json.loads(ok.stdout.splitlines()[-1])
    failed = [
        (call["name"], call["result"].get("message", ""))
        for line in (g.tmp / "with_key" / "trajectory.jsonl").read_text().splitlines()
        for cell in json.loads(line).get("calls", []) or []
        if isinstance(cell, dict)
        for call in cell.get("robot_calls", []) or []
        if not call["result"].get("success")
    ]
    assert result["status"] == "SUCCEEDED" and result["calls"] > 0, result
    assert result["failures"] == 0 and not failed, failed


@pytest.mark.ros
def test_launch_refuses_an_unusable_key_and_an_unsecured_graph_kind(tmp_path: Path) -> None:
    require_ros2_cli()
    cli = RosCli(cli_env(90 + os.getpid() % 10), tmp_path)
    loose = tmp_path / "loose.key"
    loose.write_text("x" * 64)
    loose.chmod(0o644)
    for args, expected in (
        (("backend:=fake", f"key_file:={loose}"), "others can read it"),
        (("backend:=humanoid", f"key_file:={generate_key(tmp_path / 'k')}"), "arm graph only"),
    ):
        res = cli.run("launch", "captain_ros", "captain.launch.py", "secure:=true", *args,
                      timeout_s=120.0)  # fmt: skip
        out = res.stdout + res.stderr
        assert res.returncode != 0 and expected in out and "Traceback" not in out, out
