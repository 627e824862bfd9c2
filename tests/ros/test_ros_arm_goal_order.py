"""Goal order of the streamed arm bridge: every control tick sends a FollowJointTrajectory goal
that preempts the previous one. Under load the driver's executor may start two goals out of order
and the client may hear an older goal's end after it sent a newer one; neither may abort the
newest goal (CI saw "the driver aborted the trajectory (preempted by a newer goal)" latch the
e-stop mid-move on a loaded fresh machine)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from arm_bridge_helpers import InProcessDriver, arm_config
from control_msgs.action import FollowJointTrajectory
from trajectory_msgs.msg import JointTrajectoryPoint

from captain_ros.ros.arm_bridge.transport import duration_msg


class Handle:
    """What the driver's execute callback uses of rclpy's ``ServerGoalHandle``."""

    def __init__(self, request: Any) -> None:
        self.request = request
        self.is_cancel_requested = False
        self.outcome = ""

    def succeed(self) -> None:
        self.outcome = "succeeded"

    def abort(self) -> None:
        self.outcome = "aborted"

    def canceled(self) -> None:
        self.outcome = "canceled"


@pytest.fixture
def bridge(driver: InProcessDriver, domain_id: int, tmp_path: Path):
    """The bridge's transport to ``driver``, its trajectory server found."""
    from captain_ros.ros.arm_bridge.transport import RclpyArmTransport

    t = RclpyArmTransport(arm_config(tmp_path / "calib", domain_id))
    assert t.server_ready("arm", 10.0)
    yield t
    t.close()


def goal_to(driver: InProcessDriver, q: np.ndarray, t_s: float) -> Any:
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = list(driver.driver.joint_names("arm"))
    goal.trajectory.points = [
        JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=duration_msg(t_s))
    ]
    return goal


def test_an_older_goal_started_late_never_preempts_the_newer(driver: InProcessDriver) -> None:
    from rclpy.action import GoalResponse

    node = driver.node
    q0 = driver.driver.joint_states()[1][:6]
    older, newer = goal_to(driver, q0 + 0.01, 0.3), goal_to(driver, q0 + 0.02, 0.3)
    assert node._check_goal("arm", older) == GoalResponse.ACCEPT
    assert node._check_goal("arm", newer) == GoalResponse.ACCEPT
    h_new, h_old = Handle(newer), Handle(older)
    runner = threading.Thread(target=node._execute, args=("arm", h_new))
    runner.start()  # the newer goal's callback runs first...
    time.sleep(0.05)
    node._execute("arm", h_old)  # ...the older one after it: superseded at once, nothing moved
    assert h_old.outcome == "aborted"
    runner.join(10.0)
    assert h_new.outcome == "succeeded"
    assert np.allclose(driver.driver._setpoint["arm"], q0 + 0.02)  # the controller holds it
    time.sleep(0.3)  # let the position servo settle on it
    q = np.asarray(driver.driver.joint_states()[1][:6])
    assert np.max(np.abs(q - (q0 + 0.02))) < np.max(np.abs(q - (q0 + 0.01)))


def test_a_late_end_of_an_older_goal_leaves_the_newest_state(
    driver: InProcessDriver, bridge
) -> None:
    from action_msgs.msg import GoalStatus

    q0 = np.asarray(driver.driver.joint_states()[1][:6])
    joints = driver.driver.joint_names("arm")
    assert bridge.send_trajectory("arm", joints, [(q0 + 0.01, 2.0)], 5.0).status == "accepted"
    assert bridge.send_trajectory("arm", joints, [(q0 + 0.02, 2.0)], 5.0).status == "accepted"
    aborted = SimpleNamespace(
        status=GoalStatus.STATUS_ABORTED,
        result=SimpleNamespace(error_string="preempted by a newer goal"),
    )
    bridge._on_result("arm", 1, SimpleNamespace(result=lambda: aborted))  # goal 1 ends late
    assert bridge.goal_state("arm").status == "accepted"
    bridge._on_result("arm", 2, SimpleNamespace(result=lambda: aborted))  # the newest one aborts
    assert bridge.goal_state("arm").status == "aborted"
    # the real goals end before the driver closes (an unstarted one is a never-awaited coroutine,
    # a running one answers on a destroyed node): the newest one's real result arrives last
    deadline = time.monotonic() + 10.0
    while bridge.goal_state("arm").status != "succeeded" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert bridge.goal_state("arm").status == "succeeded"


def test_a_fast_stream_of_goals_is_never_aborted(driver: InProcessDriver, bridge) -> None:
    """60 goals 10 ms apart through DDS, each preempting the last: the newest is never aborted."""
    q0 = np.asarray(driver.driver.joint_states()[1][:6])
    joints = driver.driver.joint_names("arm")
    seen = []
    for i in range(60):
        q = q0 + 0.0005 * i
        # 15 s: a clean-clone CI run once saw no answer within 5 s (not reproduced in 4 reruns);
        # what this test guards is that the newest goal is never aborted, not the answer's latency
        assert bridge.send_trajectory("arm", joints, [(q, 0.05)], 15.0).status == "accepted"
        for _ in range(2):
            time.sleep(0.005)
            seen.append(bridge.goal_state("arm"))
    assert not [s for s in seen if s.status == "aborted"], seen
    deadline = time.monotonic() + 10.0
    while bridge.goal_state("arm").status == "accepted" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert bridge.goal_state("arm").status == "succeeded"


def test_the_bridge_leaves_the_cpu_to_the_driver(driver: InProcessDriver, bridge) -> None:
    """The bridge's executor must not busy-spin on its 100 Hz subscription (rclpy's
    multi-threaded executor did: 100 % of a core, the driver's /joint_states starved to 8 Hz and
    the 1 s stale-feedback guard latched mid-move). Two seconds carry ~200 states; 40 is the floor
    a loaded machine still clears and the busy-spinning bridge (~16) did not."""
    first = bridge.wait_joint_sample(-1.0, 10.0)
    assert first is not None
    seen, last, end = 0, first.received_s, time.monotonic() + 2.0
    while time.monotonic() < end:
        s = bridge.wait_joint_sample(last, end - time.monotonic())
        if s is not None:
            seen, last = seen + 1, s.received_s
    assert seen >= 40, f"{seen} joint states in 2 s (driver publishes at 100 Hz)"
