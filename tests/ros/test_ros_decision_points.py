"""The robot stack's snapshot/restore services cover the whole robot side (RE-0 decision points):
backend, safety layer, motion history and the perception node's store, over real ROS services."""

from __future__ import annotations

import numpy as np
import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter

from captain_ros.backends import make_backend
from captain_ros.ros.calls import RosRobotCaller, call_sync

pytestmark = pytest.mark.ros


@pytest.fixture
def stack(ros_context, spinner):
    from captain_ros.ros.robot_stack import make_robot_stack
    from captain_ros.tasks import get_task

    backend = make_backend("fake", get_task("pick_place").sample(5))  # with the safety layer
    robot, perception = make_robot_stack(
        backend=backend,
        context=ros_context,
        robot_overrides=[Parameter("require_episode", value=False)],
    )
    client = Node("dp_client", context=ros_context)
    caller = RosRobotCaller(client)
    spinner.add(robot, perception, client)
    assert caller.wait_for_services(10.0)
    yield backend, client, caller
    robot.trigger_shutdown()


def test_snapshot_and_restore_cover_perception_and_motion(stack):
    from captain_ros_interfaces.srv import Restore, Snapshot

    backend, client, caller = stack
    snap = client.create_client(Snapshot, "/captain/robot/snapshot")
    restore = client.create_client(Restore, "/captain/robot/restore")
    assert snap.wait_for_service(timeout_sec=5.0) and restore.wait_for_service(timeout_sec=5.0)
    assert caller.call("observe", {}).value["handle"] == "obs_1"
    start = backend.ee_pose("arm").position_m.copy()
    assert caller.call(
        "move_to", {"position": [float(start[0]), float(start[1]) - 0.04, float(start[2])]}
    ).success
    trace = caller.call("read_motion_trajectory", {}).value
    saved = call_sync(snap, Snapshot.Request(), 10.0)
    assert (
        saved.success
        and saved.message == "stored: backend, safety layer, motion history, perception store"
    )
    here = backend.ee_pose("arm").position_m.copy()
    assert caller.call("observe", {}).value["handle"] == "obs_2"
    assert caller.call(
        "move_to", {"position": [float(here[0]) + 0.03, float(here[1]), float(here[2])]}
    ).success
    assert call_sync(restore, Restore.Request(snapshot_id=saved.snapshot_id), 10.0).success
    assert np.array_equal(backend.ee_pose("arm").position_m, here)
    assert caller.call("observe", {}).value["handle"] == "obs_2"  # the store's counter came back
    assert caller.call("read_motion_trajectory", {}).value == trace
    assert caller.call("recover", {"distance_m": 0.02}).success  # along the restored history


def test_an_episode_run_over_ros_restores_at_t_and_continues_identically(stack, tmp_path):
    """The harness over ROS (the policy node's path): record with the robot node's snapshots, then
    restore request 4 through its services and continue; the log is the same."""
    import json

    from captain_ros_interfaces.srv import PrivilegedState, Snapshot

    from captain_ros.harness.episode.budgets import Budgets
    from captain_ros.harness.episode.loop import run_episode
    from captain_ros.harness.sandbox.session import SessionConfig
    from captain_ros.policy.scripted import ScriptedPolicy
    from captain_ros.research.re0.decision_points import (
        RecordedEpisode,
        rehydrate_policy,
        restore_decision_point,
    )
    from captain_ros.ros.decision_points import ServiceRestorer
    from captain_ros.ros.episode_glue import ServicePrivileged
    from captain_ros.tasks import get_task

    backend, client, caller = stack
    task = get_task("pick_place")
    priv = ServicePrivileged(
        client.create_client(PrivilegedState, "/captain/robot/privileged_state"),
        client.create_client(Snapshot, "/captain/robot/snapshot"),
        call_sync,
    )
    restorer = ServiceRestorer(client)
    assert restorer.wait_for_services(10.0) and priv.snapshot_client.wait_for_service(
        timeout_sec=5.0
    )

    def frozen() -> float:
        return 0.0

    first = run_episode(
        task,
        5,
        caller,
        ScriptedPolicy(),
        Budgets(),
        tmp_path / "ep",
        privileged=priv,
        session_config=SessionConfig(rng_seed=5),
        clock=frozen,
    )
    assert first.outcome == "success_with_finish"
    rec = RecordedEpisode.load(tmp_path / "ep")
    res = restore_decision_point(rec, 4, None, task, tmp_path / "r", restorer=restorer)
    pol = ScriptedPolicy()
    rehydrate_policy(pol, rec, 4)
    again = run_episode(
        task, 5, caller, pol, Budgets(), tmp_path / "r", privileged=priv, resume=res, clock=frozen
    )
    assert again.outcome == first.outcome and again.requests == first.requests
    drop = ("model_s", "backend_s", "harness_s")
    for a, b in zip(rec.requests, RecordedEpisode.load(tmp_path / "r").requests, strict=True):
        a, b = json.loads(json.dumps(a)), json.loads(json.dumps(b))
        for line in (a, b):
            for k in drop:
                line.pop(k)
            for cell in line["calls"]:
                cell.pop("duration_s")
                cell.pop("call_s")
        assert a == b, f"request {a['t']} differs"
