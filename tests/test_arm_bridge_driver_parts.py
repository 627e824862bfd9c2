"""The simulated arm driver's ROS-free parts (captain_ros.ros.arm_bridge): trajectory goal checks,
the order goals take effect in, when a gripper command is done, and the cameras' calibration
files (a real MuJoCo rig). Nothing here imports rclpy, so this module is in the fast tier."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captain_ros.backends.cameras.frames import load_extrinsics
from captain_ros.backends.ros_arm.simulated import SimulatedArmDriver
from captain_ros.ros.arm_bridge.calibration import write_calibration
from captain_ros.ros.arm_bridge.goal_order import GoalOrder
from captain_ros.ros.arm_bridge.gripper_watch import STALL_S, TIMEOUT_S, GripWatch
from captain_ros.ros.arm_bridge.trajectory_goal import TrajectoryGoal
from captain_ros.tasks import get_task

JOINTS = ("joint1", "joint2", "joint3")
LOWER, UPPER = np.array([-1.0, 0.0, -2.0]), np.array([1.0, 2.0, 0.0])


def _problem(names=JOINTS, times=(0.5, 1.0), positions=((0, 1, -1), (0.5, 1.5, -0.5))) -> str:
    return TrajectoryGoal(tuple(names), tuple(times), tuple(map(tuple, positions))).problem(
        JOINTS, LOWER, UPPER
    )


def test_a_valid_goal_in_another_joint_order_is_reordered() -> None:
    assert _problem() == ""
    goal = TrajectoryGoal(("joint3", "joint1", "joint2"), (0.5,), ((-1.0, 0.25, 1.5),))
    assert goal.problem(JOINTS, LOWER, UPPER) == ""
    assert goal.ordered(JOINTS).tolist() == [[0.25, 1.5, -1.0]]
    # each position is checked against its own joint's limits (joint3 <= 0), not its slot's
    wrong = TrajectoryGoal(("joint3", "joint1", "joint2"), (0.5,), ((0.5, 0.25, 1.5),))
    assert "[0.5, 0.25, 1.5] outside the joint limits" in wrong.problem(JOINTS, LOWER, UPPER)


@pytest.mark.parametrize(
    ("goal", "why"),
    [
        ({"names": ("joint1", "joint2")}, "joints ['joint1', 'joint2'] are not"),
        ({"names": ("joint1", "joint2", "joint9")}, "are not ['joint1', 'joint2', 'joint3']"),
        ({"times": (), "positions": ()}, "no points"),
        ({"positions": ((0, 1, -1), (0.5, 1.5))}, "one finite position per joint"),
        ({"positions": ((0, 1, -1), (0.5, float("nan"), -0.5))}, "one finite position"),
        ({"positions": ((0, 1, -1), (1.01, 1.5, -0.5))}, "[1.01, 1.5, -0.5] outside the joint"),
        ({"positions": ((0, -0.01, -1), (0, 1, -1))}, "outside the joint limits"),
        ({"times": (1.0, 0.5)}, "time_from_start must not decrease"),
        ({"times": (0.0, 0.0)}, "the last point needs time_from_start > 0"),
    ],
)
def test_an_invalid_goal_is_rejected_with_its_reason(goal: dict, why: str) -> None:
    assert why in _problem(**goal)


def test_a_point_within_the_slack_of_a_limit_is_accepted() -> None:
    assert _problem(positions=((1.0009, 2.0009, 0.0009), (-1.0009, -0.0009, -2.0009))) == ""


def test_goals_take_effect_in_the_order_they_were_accepted() -> None:
    order = GoalOrder(["arm", "left"])
    started: list[str] = []

    def begin(name: str) -> Callable[[], int]:
        def start() -> int:  # the driver's follow(): starts the motion, returns its token
            started.append(name)
            return len(started)

        return start

    assert order.accept("arm", "g1") == 1 and order.accept("arm", "g2") == 2
    assert order.accept("left", "l1") == 1  # each arm numbers its own goals
    assert order.start("arm", "g2", begin("g2")) == 1  # the newer one's callback ran first
    assert order.start("arm", "g1", begin("g1")) is None  # the older one: superseded, not run
    assert order.start("left", "l1", begin("l1")) == 2
    assert started == ["g2", "l1"] and order.pending == 0


def test_no_goal_is_accepted_while_one_starts() -> None:
    """The check and the start are one step: a newer goal accepted meanwhile would be preempted
    by the older goal that started after it."""
    order = GoalOrder(["arm"])
    order.accept("arm", "old")
    in_begin, accepted = threading.Event(), threading.Event()

    def begin() -> int:
        in_begin.set()
        time.sleep(0.2)
        assert not accepted.is_set()  # the newer goal's acceptance waits for the start
        return 7

    def accept_newer() -> None:
        in_begin.wait(5.0)
        order.accept("arm", "new")
        accepted.set()

    t = threading.Thread(target=accept_newer)
    t.start()
    assert order.start("arm", "old", begin) == 7
    t.join(5.0)
    assert accepted.is_set() and order.start("arm", "new", lambda: 8) == 8


def test_a_gripper_command_is_done_when_reached_stalled_or_timed_out() -> None:
    reach = GripWatch(0.02, 0.08, now_s=0.0)
    assert not reach.update(0.05, 0.1).done  # closing
    p = reach.update(0.0205, 0.2)
    assert p.reached and p.done and not p.stalled and p.position_m == 0.0205

    stall = GripWatch(0.0, 0.08, now_s=0.0)
    assert not stall.update(0.04, 0.1).done
    assert not stall.update(0.04015, 0.09 + STALL_S).done  # still, but not yet for long enough
    p = stall.update(0.0401, 0.11 + STALL_S)  # an object between the fingers
    assert p.stalled and p.done and not p.reached

    slow = GripWatch(0.0, 0.08, now_s=0.0)
    t, gap = 0.0, 0.08
    while t <= TIMEOUT_S:  # moving on, never reaching: neither reached nor stalled
        t, gap = t + 0.1, gap - 0.0003
        p = slow.update(gap, t)
        assert not (p.reached or p.stalled)
    assert p.timed_out and p.done


def test_calibration_files_are_the_cameras_poses(tmp_path: Path) -> None:
    driver = SimulatedArmDriver(get_task("pick_place").sample(3), image_size_px=32)
    try:
        files = write_calibration(driver, tmp_path / "calib")
        cameras = tuple(driver.sim.spec.cameras)
        assert [f.name for f in files] == [f"{c}.yaml" for c in cameras]
        wrist = {idx.wrist_camera: idx.prefix for idx in driver.arms.values()}
        assert wrist and set(cameras) - set(wrist), cameras  # a wrist and a fixed camera
        for cam in cameras:
            world_from_camera = np.asarray(driver.render(cam).world_from_camera)
            path = tmp_path / "calib" / f"{cam}.yaml"
            if cam in wrist:
                flange = driver.body_matrix(f"{wrist[cam]}link6")
                got = flange @ load_extrinsics(path, "flange_from_optical")
            else:
                got = load_extrinsics(path, "world_from_optical")
            assert np.allclose(got, world_from_camera, atol=1e-6), cam
    finally:
        driver.close()
