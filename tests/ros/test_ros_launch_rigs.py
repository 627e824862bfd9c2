"""Issue 36: every rig through the real `ros2 launch` + `ros2 action send_goal` (../shared/ros2-tools),
asserting the episode's outcome, not only topics.

The emulated PiPER (``backend:=piper emulate:=true``): a goal whose seed differs from the launch's
scene makes the robot node rebuild its backend (the path where the feedback froze), and the episode
must reach strict success with no failed action. The e-stop through the graph: triggered on
``/captain/estop/trigger`` while the arm moves, the arm holds within one control tick, the episode
fails with ``estop``, the next goal is refused while it stays latched, and after
``/captain/estop/reset`` a goal runs again.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from ros_cli import RosCli, cli_env, goal, require_ros2_cli
from ros_fixtures import STATE_DIR

from captain_ros.core.share import share_path

pytestmark = [pytest.mark.ros, pytest.mark.slow]
SEND_GOAL = (
    "action",
    "send_goal",
    "/captain/run_episode",
    "captain_ros_interfaces/action/RunEpisode",
)
CONTROL_TICK_S = 0.02  # the motion layer's control tick
JOINT_RATE_HZ = 100.0


def result_fields(text: str) -> dict[str, str]:
    """``key: value`` lines of the Result block of `ros2 action send_goal`."""
    block = text.split("Result:", 1)[1] if "Result:" in text else ""
    return {
        m.group(1): m.group(2).strip().strip("'")
        for line in block.splitlines()
        if (m := re.match(r"\s*(\w+): (.*)$", line))
    }


def start_graph(tmp: Path, domain: int, *launch_args: str) -> tuple[RosCli, Any]:
    """`ros2 launch captain_ros captain.launch.py ARGS` with /joint_states at 100 Hz, up to its
    action server."""
    params = yaml.safe_load(share_path("config", "captain.yaml").read_text())
    params["captain_robot"]["ros__parameters"]["joint_state_rate_hz"] = JOINT_RATE_HZ
    params_file = tmp / "params.yaml"
    params_file.write_text(yaml.safe_dump(params))
    cli = RosCli(cli_env(domain), tmp)
    proc = cli.start(
        "launch", "captain_ros", "captain.launch.py", *launch_args,
        f"params_file:={params_file}", f"bag_dir:={tmp / 'bags'}", f"allowed_root:={tmp}",
        log=STATE_DIR / "children" / f"launch-rigs-{domain}.log",
    )  # fmt: skip
    cli.wait_for("action", "/captain/run_episode", 240.0, proc)
    return cli, proc


def emulated_rig_file(tmp: Path, name: str) -> Path:
    """The packaged PiPER rig file ``name`` with the whole-episode tests' feedback limits (the
    age that is stale, the wait for an arm's first frame).

    The emulator's controller runs in the robot process, under its GIL, beside the SDK's reader,
    the motion loop and the executor; on the shared 2-core CI machine a busy moment starves it
    for 100-400 ms (measured: `e-stop latched by guard:link: arm: joint feedback is stale (382
    ms old, limit 100 ms)`), which a real controller streaming over CAN never is. The shipped
    100 ms is measured by benchmarks/launch_feedback_age.py and tested with injected dropped
    feedback (tests/hardware/test_piper_faults_reach_policy.py); the regression these tests
    guard against (issue 36: the reader frozen after a scene change, ages growing 1 s per
    second) exceeds 3 s within the first seconds of an episode. A fresh emulator built for a
    goal's scene, starved the same way, took over the shipped 1 s to send its first frame."""
    from arm_bridge_helpers import EPISODE_FEEDBACK_AGE_S, EPISODE_GOAL_TIMEOUT_S

    data = yaml.safe_load(share_path("config", name).read_text())
    data["piper"]["safety"]["max_feedback_age_s"] = EPISODE_FEEDBACK_AGE_S
    data["piper"]["feedback_timeout_s"] = EPISODE_GOAL_TIMEOUT_S
    path = tmp / name
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def piper_graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RosCli, Any, Path]]:
    require_ros2_cli()
    tmp = tmp_path_factory.mktemp("piper_launch")
    cli, proc = start_graph(tmp, 80 + os.getpid() % 10, "backend:=piper", "emulate:=true",
                            f"backend_config:={emulated_rig_file(tmp, 'piper.yaml')}",
                            "task:=pick_place")  # fmt: skip
    try:
        yield cli, proc, tmp
    finally:
        cli.stop_all()


def test_emulated_piper_pick_place_reaches_strict_success(
    piper_graph: tuple[RosCli, Any, Path],
) -> None:
    cli, proc, tmp = piper_graph
    res = cli.run(*SEND_GOAL, goal(task="pick_place", seed=3, output_dir=str(tmp / "ep")),
                  timeout_s=600.0)  # fmt: skip
    assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-3000:]
    fields = result_fields(res.stdout)
    assert fields["outcome_label"] == "success_with_finish", fields
    assert fields["strict_success"] == "true" and fields["host_success"] == "true"
    assert int(fields["physical_actions"]) >= 6
    # the emulator runs in real time: under load a grasp may need a second try, but no call may
    # fail on the link (the issue: every move refused as stale, reported as internal_error)
    assert not (bad := link_failures(tmp / "ep")), (bad, fields)
    log = cli.log_of(proc)
    assert "stale" not in log and "Traceback" not in log and "internal error" not in log


def link_failures(episode: Path) -> list[dict[str, Any]]:
    """The robot calls of the episode that failed as a hardware fault, an e-stop or an internal
    error (none expected), each as its recorded result."""
    import json

    bad = ("hardware", "estop", "internal_error")
    calls = [
        robot_call["result"]
        for line in (episode / "trajectory.jsonl").read_text().splitlines()
        for cell in json.loads(line).get("calls", []) or []
        if isinstance(cell, dict)
        for robot_call in cell.get("robot_calls", []) or []
    ]
    assert calls, f"no robot calls in {episode}"
    return [c for c in calls if c.get("failure_category") in bad]


class _GraphProbe:
    """An rclpy node on the graph's domain: /joint_states samples and the e-stop services."""

    def __init__(self, domain: int) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from sensor_msgs.msg import JointState
        from std_srvs.srv import Trigger

        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx, domain_id=domain)
        self.node = rclpy.create_node("estop_probe", context=self.ctx)
        self.samples: list[tuple[float, np.ndarray, np.ndarray]] = []
        self.moving = threading.Event()
        self.node.create_subscription(JointState, "/joint_states", self._on_joints, 200)
        self.trigger = self.node.create_client(Trigger, "/captain/estop/trigger")
        self.reset = self.node.create_client(Trigger, "/captain/estop/reset")
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.ctx)
        self.executor.add_node(self.node)
        threading.Thread(target=self.executor.spin, daemon=True).start()

    def _on_joints(self, msg: Any) -> None:
        n = sum(1 for name in msg.name if name.startswith("joint"))  # the six arm joints
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        q, qd = np.array(msg.position[:n]), np.array(msg.velocity[:n])
        self.samples.append((stamp, q, qd))
        if n and float(np.abs(qd).max()) > 0.1:
            self.moving.set()

    def call(self, client: Any) -> tuple[float, Any]:
        """Call a Trigger service; returns (wall time of the reply [s], response)."""
        from std_srvs.srv import Trigger

        assert client.wait_for_service(timeout_sec=30.0)
        done = threading.Event()
        future = client.call_async(Trigger.Request())
        future.add_done_callback(lambda _f: done.set())
        assert done.wait(30.0), "the e-stop service did not answer"
        return time.time(), future.result()

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=2.0)
        self.ctx.try_shutdown()


def test_estop_through_the_graph_latches_within_a_tick_and_holds_across_goals(
    piper_graph: tuple[RosCli, Any, Path],
) -> None:
    cli, _proc, tmp = piper_graph
    domain = int(cli.env["ROS_DOMAIN_ID"])
    probe = _GraphProbe(domain)
    try:
        out: dict[str, Any] = {}
        episode = threading.Thread(target=lambda: out.setdefault("res", cli.run(
            *SEND_GOAL, goal(task="pick_place", seed=4, output_dir=str(tmp / "ep_estop")),
            timeout_s=600.0)))  # fmt: skip
        episode.start()
        assert probe.moving.wait(300.0), "the arm never moved"
        t_latched, resp = probe.call(probe.trigger)
        assert resp.success, resp.message
        episode.join(600.0)
        # held within one control tick of the latch: every sample stamped later than one tick
        # (+ one sample period) after the reply is at the held pose until the episode ended
        late = t_latched + CONTROL_TICK_S + 1 / JOINT_RATE_HZ
        after = [q for t, q, _ in list(probe.samples) if t > late]
        assert len(after) > 20, "no /joint_states after the e-stop"
        drift = max(float(np.abs(q - after[-1]).max()) for q in after)
        assert drift < 0.01, f"the arm moved {drift:.4f} rad after the e-stop latched"
        res = out["res"]
        assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-3000:]
        fields = result_fields(res.stdout)
        assert fields["strict_success"] == "false" and int(fields["failures"]) >= 1, fields
        # held across a new goal: refused with the reason, until the operator's reset
        refused = cli.run(*SEND_GOAL, goal(task="pick_place", seed=5, max_requests=2,
                                           output_dir=str(tmp / "ep_refused")))  # fmt: skip
        assert "Goal finished with status: ABORTED" in refused.stdout, refused.stdout[-2000:]
        assert result_fields(refused.stdout)["outcome_label"] == "estop"
        _t, reset = probe.call(probe.reset)
        assert reset.success, reset.message
        again = cli.run(*SEND_GOAL, goal(task="pick_place", seed=5, max_requests=2,
                                         output_dir=str(tmp / "ep_after_reset")))  # fmt: skip
        assert "Goal finished with status: SUCCEEDED" in again.stdout, again.stdout[-2000:]
        assert not (bad := link_failures(tmp / "ep_after_reset")), bad
    finally:
        probe.close()


def test_emulated_dual_piper_two_arm_lift_reaches_strict_success(tmp_path: Path) -> None:
    require_ros2_cli()
    cli, proc = start_graph(tmp_path, 90 + os.getpid() % 10, "backend:=piper", "emulate:=true",
                            f"backend_config:={emulated_rig_file(tmp_path, 'piper_dual.yaml')}",
                            "task:=two_arm_lift")  # fmt: skip
    try:
        res = cli.run(*SEND_GOAL, goal(task="two_arm_lift", seed=3, output_dir=str(tmp_path / "ep")),
                      timeout_s=600.0)  # fmt: skip
        assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-3000:]
        fields = result_fields(res.stdout)
        assert fields["outcome_label"] == "success_with_finish", fields
        assert fields["strict_success"] == "true", fields
        assert not (bad := link_failures(tmp_path / "ep")), bad
        assert '"backend": "piper"' in fields["summary_json"]
        log = cli.log_of(proc)
        assert "arms ('left', 'right')" in log and "stale" not in log and "Traceback" not in log
    finally:
        cli.stop_all()


def test_ros_arm_with_the_simulated_driver_started_by_the_launch(tmp_path: Path) -> None:
    """`backend:=ros_arm arm_driver:=sim`: the launch starts the driver, then the robot process
    once the driver wrote its calibration; the episode reaches strict success. The config's
    feedback-age and goal limits are the whole-episode tests' (a Python driver process on the
    loaded 2-core machine misses the 100 ms of a real-time driver, see arm_bridge_helpers)."""
    from arm_bridge_helpers import EPISODE_FEEDBACK_AGE_S, EPISODE_GOAL_TIMEOUT_S, write_config

    require_ros2_cli()
    domain = 20 + os.getpid() % 10
    calibration = tmp_path / "calib"
    config = write_config(tmp_path / "arm.yaml", calibration, domain,
                          EPISODE_FEEDBACK_AGE_S, EPISODE_GOAL_TIMEOUT_S)  # fmt: skip
    cli, proc = start_graph(tmp_path, domain, "backend:=ros_arm", "arm_driver:=sim",
                            f"backend_config:={config}", f"calibration_dir:={calibration}",
                            "task:=pick_place", "seed:=3")  # fmt: skip
    try:
        res = cli.run(*SEND_GOAL, goal(task="pick_place", seed=3, output_dir=str(tmp_path / "ep")),
                      timeout_s=600.0)  # fmt: skip
        assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-3000:]
        fields = result_fields(res.stdout)
        assert fields["outcome_label"] == "success_with_finish", (fields, cli.log_of(proc)[-3000:])
        assert fields["strict_success"] == "true"
        assert '"backend": "ros_arm"' in fields["summary_json"]
        assert (calibration / "head.yaml").is_file() and (calibration / "wrist.yaml").is_file()
    finally:
        cli.stop_all()


def test_a_robot_that_dies_in_configure_stops_the_launch_with_its_reason(tmp_path: Path) -> None:
    """No driver: the packaged ros_arm config's calibration resolves against the working
    directory (not into the package), configure fails, and the launch stops saying why."""
    require_ros2_cli()
    cli = RosCli(cli_env(35 + os.getpid() % 5), tmp_path)
    res = cli.run("launch", "captain_ros", "captain.launch.py", "backend:=ros_arm",
                  "backend_config:=config/ros_arm_piper.yaml", "record:=false",
                  timeout_s=180.0)  # fmt: skip
    out = res.stdout + res.stderr
    want = f"configure failed: InvalidArgumentError: camera calibration {tmp_path}/build/ros_arm_sim/head.yaml does not exist"
    assert want in out, out[-3000:]
    assert "was required: shutting down launched system" in out and "Traceback" not in out
    res = cli.run("launch", "captain_ros", "captain.launch.py", "backend:=xr1", timeout_s=60.0)
    assert "use backend:=ros_arm backend_config:=config/xr1.yaml" in res.stdout + res.stderr
    res = cli.run("launch", "captain_ros", "captain.launch.py", "arm_driver:=sim", timeout_s=60.0)
    assert "arm_driver:=sim applies to backend:=ros_arm only" in res.stdout + res.stderr


def test_humanoid_pair_runs_one_coevolve_loop_to_its_termination_label(tmp_path: Path) -> None:
    """`backend:=humanoid` (controller node, CoEvolve node) + `ros2 action send_goal`: one whole
    transaction loop (the default budget) ends with a termination label; the scripted roles on
    the base corridor certify every milestone (simulated 4x faster than real time)."""
    import json

    require_ros2_cli()
    params = yaml.safe_load(share_path("config", "captain.yaml").read_text())
    params["captain_humanoid"]["ros__parameters"]["real_time_factor"] = 4.0
    params["captain_coevolve"]["ros__parameters"]["output_root"] = str(tmp_path / "runs")
    params_file = tmp_path / "humanoid.yaml"
    params_file.write_text(yaml.safe_dump(params))
    cli = RosCli(cli_env(95 + os.getpid() % 5), tmp_path)
    proc = cli.start("launch", "captain_ros", "captain.launch.py", "backend:=humanoid",
                     "record:=false", f"params_file:={params_file}",
                     log=tmp_path / "launch.log")  # fmt: skip
    try:
        cli.wait_for("action", "/captain/run_episode", 240.0, proc)
        cli.wait_for("topic", "/captain/humanoid/state", 120.0, proc)
        res = cli.run(*SEND_GOAL, goal(task="base", seed=1000, policy="scripted"), timeout_s=600.0)
        assert "Goal finished with status: SUCCEEDED" in res.stdout, res.stdout[-3000:]
        fields = result_fields(res.stdout)
        summary = json.loads(fields["summary_json"])
        assert summary["outcome"]["termination"] == fields["outcome_label"] == "success", fields
        assert fields["strict_success"] == "true"
        assert summary["certified"] == summary["milestones"] and summary["outcome"]["accepted"] >= 6
        assert (Path(summary["out_dir"]) / "run.jsonl").is_file()
    finally:
        cli.stop_all()
