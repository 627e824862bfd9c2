"""Who can command the robot through the graph (docs/ros.md, "Who can command the robot"):
through the real `ros2 launch` graph, robot calls outside the active episode are refused, goals'
output folders and `replay:` files are confined to `allowed_root`, every node gets localhost
discovery and the launch's domain, `secure:=true` needs the deployment's key and SROS2
(`ROS_SECURITY_ENABLE`) is refused (the Fast DDS wheel has no security plugins). In-process real nodes: a real rig serves no world-changing debug services and
no ground truth unless asked."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from action_msgs.msg import GoalStatus
from captain_ros_interfaces.action import RunEpisode
from rclpy.node import Node
from rclpy.parameter import Parameter
from ros_cli import RosCli, cli_env, require_ros2_cli
from ros_fixtures import STATE_DIR, Spinner, wait_until
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from captain_ros.core import FailureCategory
from captain_ros.core.errors import InvalidArgumentError, NotSupportedError
from captain_ros.ros.access import confine, debug_services, graph_environment
from captain_ros.ros.action_client import ActionClient
from captain_ros.ros.calls import RosRobotCaller
from captain_ros.ros.env import ros_environment, transport_environment
from captain_ros.ros.qos import FEEDBACK_QOS


class Graph:
    def __init__(self, cli: RosCli, proc: Any, node: Node, root: Path, domain: int) -> None:
        self.cli, self.proc, self.node, self.root, self.domain = cli, proc, node, root, domain
        self.client = ActionClient(
            node, RunEpisode, "/captain/run_episode", feedback_sub_qos_profile=FEEDBACK_QOS
        )

    def run(self, **goal: Any) -> Any:
        done = threading.Event()
        fut = self.client.send_goal_async(RunEpisode.Goal(**goal))
        fut.add_done_callback(lambda _f: done.set())
        assert done.wait(60), "goal not answered"
        handle = fut.result()
        assert handle is not None and handle.accepted
        done.clear()
        res = handle.get_result_async()
        res.add_done_callback(lambda _f: done.set())
        assert done.wait(120), "no result"
        return res.result()


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    import rclpy

    require_ros2_cli()
    tmp = tmp_path_factory.mktemp("access")
    root = tmp / "runs"
    root.mkdir()
    domain = 30 + os.getpid() % 10
    env = cli_env(domain)
    env.pop("ROS_AUTOMATIC_DISCOVERY_RANGE", None)  # the launch must set it
    cli = RosCli(env, tmp)
    proc = cli.start(
        "launch",
        "captain_ros",
        "captain.launch.py",
        "backend:=fake",
        "record:=false",
        f"allowed_root:={root}",
        log=STATE_DIR / "children" / f"access-{domain}.log",
    )
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = Node("access_probe", context=ctx)
    spinner = Spinner(ctx)
    g = Graph(cli, proc, node, root, domain)
    spinner.add(node)
    try:
        assert g.client.wait_for_server(timeout_sec=180.0), cli.log_of(proc)[-3000:]
        yield g
    finally:
        spinner.shutdown()
        node.destroy_node()
        ctx.try_shutdown()
        cli.stop_all()


@pytest.mark.slow
def test_robot_calls_outside_an_episode_are_refused(graph: Graph) -> None:
    joints: list[JointState] = []
    ev = threading.Event()

    def on_joints(msg: JointState) -> None:
        joints.append(msg)
        ev.set()

    graph.node.create_subscription(JointState, "/joint_states", on_joints, 10)
    caller = RosRobotCaller(graph.node, timeout_s=20.0)
    assert caller.wait_for_services(30.0)
    wait_until(lambda: bool(joints), 20.0, ev, "joint states")
    before = list(joints[-1].position)
    for episode_id in ("", "made_up_episode"):
        caller.episode_id = episode_id
        r = caller.call("move_to", {"position": [0.3, 0.1, 0.3]})
        assert not r.success and not r.executed
        assert r.failure_category == FailureCategory.PRECONDITION, r.message
        assert "no episode is active" in r.message
    n = len(joints)
    wait_until(lambda: len(joints) > n + 2, 20.0, ev, "more joint states")
    assert list(joints[-1].position) == pytest.approx(before, abs=1e-9)  # the arm did not move
    # inside a goal, the policy's calls are served (the gate opens for that episode only)
    r = graph.run(task="pick_place", seed=3, max_requests=3, output_dir=str(graph.root / "inside"))
    assert r.status == GoalStatus.STATUS_SUCCEEDED and r.result.calls > 0, r.result.summary_json
    assert (graph.root / "inside" / "summary.json").is_file()
    caller.episode_id = r.result.episode_id  # an episode that has ended opens nothing
    assert caller.call("move_to", {"position": [0.3, 0.1, 0.3]}).failure_category == "precondition"


@pytest.mark.slow
def test_output_folders_and_replay_files_are_confined(graph: Graph, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "ep"
    r = graph.run(task="pick_place", seed=3, output_dir=str(outside))
    assert r.status == GoalStatus.STATUS_ABORTED and r.result.outcome_label == "invalid_goal"
    assert "outside the allowed root" in r.result.summary_json and not outside.parent.exists()
    link = graph.root / "escape"
    link.symlink_to(tmp_path)  # a symlink inside the root pointing out of it
    r = graph.run(task="pick_place", seed=3, output_dir=str(link / "ep"))
    assert r.result.outcome_label == "invalid_goal" and not (tmp_path / "ep").exists()
    readable = tmp_path / "readable.jsonl"
    readable.write_text('{"code": "x = 1"}\n')
    unreadable = tmp_path / "unreadable.jsonl"
    unreadable.write_text('{"code": "x = 1"}\n')
    unreadable.chmod(0)
    errors = {}
    for name, path in (
        ("readable", readable),
        ("unreadable", unreadable),
        ("missing", tmp_path / "missing.jsonl"),
        ("passwd", Path("/etc/passwd")),
    ):
        r = graph.run(
            task="pick_place",
            seed=3,
            policy=f"replay:{path}",
            output_dir=str(graph.root / "replayed"),
        )
        assert r.status == GoalStatus.STATUS_ABORTED and r.result.outcome_label == "invalid_goal"
        errors[name] = r.result.summary_json.replace(str(path), "FILE")
    assert len(set(errors.values())) == 1, errors  # nothing tells one file outside from another
    inside = graph.root / "replay.jsonl"
    inside.write_text('{"code": "s = robot.get_robot_state()"}\n')
    r = graph.run(
        task="pick_place",
        seed=3,
        policy=f"replay:{inside}",
        output_dir=str(graph.root / "replayed"),
    )
    assert r.status == GoalStatus.STATUS_SUCCEEDED and r.result.calls == 1, r.result.summary_json


@pytest.mark.slow
def test_launch_limits_discovery_and_refuses_secure_mode(graph: Graph) -> None:
    import rclpy

    log = graph.cli.log_of(graph.proc)
    assert f"captain graph on ROS_DOMAIN_ID={graph.domain}, discovery LOCALHOST" in log
    pid = int(re.findall(r"\[captain_policy-\d+\]: process started with pid \[(\d+)\]", log)[-1])
    environ = dict(
        e.split("=", 1) for e in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in e
    )
    assert environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert environ["ROS_DOMAIN_ID"] == str(graph.domain)
    # a process on another domain does not find the e-stop reset or the action server (a limit on
    # discovery only: one on the same domain and host can call both; docs/ros.md)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=graph.domain + 40)
    try:
        other = Node("other_domain", context=ctx)
        reset: Any = other.create_client(Trigger, "/captain/estop/reset")
        assert not reset.wait_for_service(timeout_sec=3.0)
        assert not ActionClient(other, RunEpisode, "/captain/run_episode").wait_for_server(
            timeout_sec=1.0
        )
    finally:
        ctx.try_shutdown()
    # secure:=true needs the deployment's key (tests/ros/test_ros_secure.py runs the secured
    # graph); SROS2 (ROS_SECURITY_ENABLE) is refused with the Fast DDS reason
    res = graph.cli.run(
        "launch",
        "captain_ros",
        "captain.launch.py",
        "backend:=fake",
        "secure:=true",
        timeout_s=60.0,
    )
    assert res.returncode != 0
    assert "secure:=true needs the deployment's key" in res.stdout + res.stderr
    sros2 = RosCli({**graph.cli.env, "ROS_SECURITY_ENABLE": "true"}, graph.cli.cwd)
    res = sros2.run("launch", "captain_ros", "captain.launch.py", "backend:=fake", timeout_s=60.0)
    assert res.returncode != 0
    assert "doesn't have the security libraries" in res.stdout + res.stderr


def test_access_rules() -> None:
    assert graph_environment({}) == {
        "ROS_DOMAIN_ID": "42",
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
    }
    assert graph_environment({"ROS_DOMAIN_ID": "7", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}) == {
        "ROS_DOMAIN_ID": "7",
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET",
    }
    assert graph_environment({"ROS_DOMAIN_ID": "7"}, "9")["ROS_DOMAIN_ID"] == "9"
    # the middleware's transport: UDP over the loopback unless the environment names one
    assert transport_environment({}) == {"FASTDDS_BUILTIN_TRANSPORTS": "UDPv4"}
    assert transport_environment({"FASTDDS_BUILTIN_TRANSPORTS": "SHM"}) == {
        "FASTDDS_BUILTIN_TRANSPORTS": "SHM"
    }
    assert ros_environment(STATE_DIR, 5, base={})["FASTDDS_BUILTIN_TRANSPORTS"] == "UDPv4"
    with pytest.raises(InvalidArgumentError, match="0..101"):
        graph_environment({}, "300")
    real = debug_services(hardware=True, ground_truth=False, allow_on_hardware=False)
    assert not any(real.values())
    asked = debug_services(hardware=True, ground_truth=False, allow_on_hardware=True)
    assert asked == {
        "snapshot": True,
        "restore": True,
        "load_scene": True,
        "privileged_state": False,
    }
    assert all(debug_services(hardware=True, ground_truth=True, allow_on_hardware=False).values())
    assert all(debug_services(hardware=False, ground_truth=True, allow_on_hardware=False).values())
    with pytest.raises(InvalidArgumentError, match="outside"):
        confine("/tmp/root/../x", "/tmp/root", "output_dir")
    assert confine("/tmp/root/a/b", "/tmp/root", "output_dir") == Path("/tmp/root/a/b").resolve()
    assert confine("/tmp/root", "/tmp/root", "output_dir") == Path("/tmp/root").resolve()
    with pytest.raises(InvalidArgumentError, match="outside"):
        confine("/tmp/rootless", "/tmp/root", "output_dir")  # a prefix is not a parent


def _robot_services(ros_context: Any, spinner: Any, debug: bool) -> set[str]:
    from captain_ros.backends.fake import FakeBackend
    from captain_ros.ros.robot_node import RobotNode
    from captain_ros.ros.runner import bring_up
    from captain_ros.tasks import get_task

    class RealRig(FakeBackend):  # a rig without ground truth, as real hardware answers
        def privileged_state(self) -> Any:
            raise NotSupportedError("a real rig has no ground truth")

    robot = RobotNode(
        backend=RealRig(scene=get_task("pick_place").sample(1000)),
        context=ros_context,
        parameter_overrides=[
            Parameter("backend", value="piper"),
            Parameter("debug_services", value=debug),
        ],
    )
    bring_up(robot)
    probe = Node(f"svc_probe_{int(debug)}", context=ros_context)
    spinner.add(robot, probe)
    wait_until(
        lambda: any(n == "/captain/estop/reset" for n, _ in probe.get_service_names_and_types()),
        20.0,
        what="the robot node's services",
    )
    names = {
        n.rsplit("/", 1)[1]
        for n, _ in probe.get_service_names_and_types()
        if n.startswith("/captain/robot/")
    }
    return names


def test_a_real_rig_serves_no_debug_services_unless_asked(ros_context: Any, spinner: Any) -> None:
    names = _robot_services(ros_context, spinner, debug=False)
    assert "call" in names and not names & {"snapshot", "restore", "load_scene", "privileged_state"}


def test_a_real_rig_serves_debug_services_when_asked(ros_context: Any, spinner: Any) -> None:
    names = _robot_services(ros_context, spinner, debug=True)
    assert {"snapshot", "restore", "load_scene"} <= names and "privileged_state" not in names


def test_a_goal_on_a_real_rig_runs_without_the_debug_services(
    ros_context: Any, spinner: Any, tmp_path: Path
) -> None:
    """The policy node skips the scene load a real rig does not serve, and the gate opens for it."""
    from captain_ros.backends.fake import FakeBackend
    from captain_ros.ros.policy_node import PolicyNode
    from captain_ros.ros.robot_stack import make_robot_stack
    from captain_ros.tasks import get_task

    class RealRig(FakeBackend):
        def privileged_state(self) -> Any:
            raise NotSupportedError("a real rig has no ground truth")

    rig = RealRig(scene=get_task("pick_place").sample(3))
    nodes = make_robot_stack(
        rig, robot_overrides=[Parameter("backend", value="piper")], context=ros_context
    )
    policy = PolicyNode(
        context=ros_context, parameter_overrides=[Parameter("output_root", value=str(tmp_path))]
    )
    probe = Node("rig_goal", context=ros_context)
    spinner.add(*nodes, policy, probe)
    graph = Graph(None, None, probe, tmp_path, 0)  # type: ignore[arg-type]
    assert graph.client.wait_for_server(timeout_sec=20.0)
    r = graph.run(task="pick_place", seed=3, max_requests=2, output_dir=str(tmp_path / "rig_ep"))
    assert r.status == GoalStatus.STATUS_SUCCEEDED, r.result.summary_json
    assert r.result.calls > 0 and (tmp_path / "rig_ep" / "summary.json").is_file()
    assert not r.result.host_success  # no ground truth judged it
    assert "load_scene" not in nodes[0].sim.served
    assert str(nodes[0].get_parameter("active_episode").value) == ""  # closed after the goal
