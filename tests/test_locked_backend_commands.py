"""The robot node's command log (LockedBackend.drain_commands, published on /captain/joint_commands):
every control tick and jaw command, what the backend applied, stamped when given. The ROS side
(the topic in a launched graph's bag, the LeRobot ``action``) is tested in
tests/ros/test_ros_learn_dataset.py."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest

from captain_ros.backends import make_backend
from captain_ros.core.errors import EStopError
from captain_ros.core.types import ForceGuard
from captain_ros.ros.locked_backend import LockedBackend
from captain_ros.tasks import get_task

GUARD = ForceGuard()
TICK_S = 0.02


@pytest.fixture
def backend() -> Iterator[LockedBackend]:
    task = get_task("pick_place", "fake")
    b = LockedBackend(make_backend("fake", task.sample(1)))
    yield b
    b.close()


def test_each_tick_and_jaw_command_is_logged_as_applied(backend: LockedBackend) -> None:
    arm = backend.spec.arm_names[0]
    st = backend.joint_state(arm)
    q0 = np.asarray(st.position_rad, float)
    jaw0 = backend.gripper(arm).command_m
    assert backend.drain_commands() == []  # nothing commanded yet
    before = time.time_ns()
    far = q0 + 5.0  # beyond the joint limits and one tick's velocity limit: clipped
    reports = [backend.servo({arm: far}, TICK_S, GUARD) for _ in range(3)]
    jaw = backend.command_gripper(arm, 0.0)
    backend.servo({}, TICK_S, GUARD)  # the jaw moves; the joints hold their targets
    cmds = backend.drain_commands()
    assert len(cmds) == 5 and backend.drain_commands() == []
    assert all(c.names == (*st.names, f"{arm}_jaw_opening_m") for c in cmds)
    stamps = [c.stamp_ns for c in cmds]
    assert before <= stamps[0] and stamps == sorted(stamps)
    for c, rep in zip(cmds, reports, strict=False):
        assert np.allclose(c.positions[:-1], rep.q_applied[arm])  # what the backend applied
        assert not np.allclose(c.positions[:-1], far)
    assert cmds[0].positions[-1] == pytest.approx(jaw0)  # the jaw's target before any jaw command
    assert cmds[3].positions[-1] == pytest.approx(jaw) and cmds[4].positions == cmds[3].positions


def test_a_new_scene_forgets_the_old_targets(backend: LockedBackend) -> None:
    arm = backend.spec.arm_names[0]
    q0 = np.asarray(backend.joint_state(arm).position_rad, float)
    backend.servo({arm: q0 + 0.05}, TICK_S, GUARD)
    backend.swap(make_backend("fake", get_task("pick_place", "fake").sample(2)))
    backend.drain_commands()
    backend.command_gripper(arm, 0.01)  # no tick in the new scene: the arm holds where it stands
    (cmd,) = backend.drain_commands()
    assert np.allclose(cmd.positions[:-1], backend.joint_state(arm).position_rad)


def test_a_refused_command_is_not_logged(backend: LockedBackend) -> None:
    arm = backend.spec.arm_names[0]
    backend.estop("test")
    with pytest.raises(EStopError):
        backend.servo({arm: np.asarray(backend.joint_state(arm).position_rad)}, TICK_S, GUARD)
    assert backend.drain_commands() == []
