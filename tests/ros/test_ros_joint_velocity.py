"""Issue 32: /joint_states reported +-0.17 rad/s while the joints were still. A simulation stands
still between robot calls (its clock does not advance) but keeps its last control tick's joint
velocities; the robot node's state publisher now reports zero velocity for a sample whose backend
clock did not advance since the arm's previous one, and the real velocity otherwise."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rclpy.node import Node

from captain_ros.core.types import ForceGuard
from captain_ros.ros.state_publisher import StatePublisher
from captain_ros.tasks import get_task

pytestmark = pytest.mark.ros


@pytest.mark.parametrize("backend_name", ["mujoco", "fake"])
def test_still_simulation_reports_zero_joint_velocity(ros_context: Any, backend_name: str) -> None:
    from captain_ros.backends import make_backend

    backend = make_backend(backend_name, get_task("pick_place").sample(1000))
    node = Node("velocity_probe", context=ros_context)
    try:
        arm = backend.spec.arm_names[0]
        pub = StatePublisher(node, (arm,), ())
        q = backend.joint_state(arm).position_rad
        # a move cut short while the joints are still accelerating: real velocities at its end
        backend.servo({arm: q + 0.3}, 0.05, ForceGuard(stop_force_n=float("inf")))
        moving = pub.at_rest_if_paused(arm, backend.joint_state(arm))
        assert float(np.abs(moving.velocity_rad_s).max()) > 0.05, moving.velocity_rad_s
        # the simulation now stands still, still holding the last tick's velocity (the bug) ...
        raw = backend.joint_state(arm)
        assert raw.stamp_s == moving.stamp_s and np.any(raw.velocity_rad_s)
        # ... which is published as zero, positions unchanged
        still = pub.at_rest_if_paused(arm, raw)
        assert still.stamp_s == moving.stamp_s and not np.any(still.velocity_rad_s)
        assert np.array_equal(still.position_rad, moving.position_rad)
        # the next move advances the clock: its velocities are reported again
        backend.servo({arm: q - 0.3}, 0.05, ForceGuard(stop_force_n=float("inf")))
        again = pub.at_rest_if_paused(arm, backend.joint_state(arm))
        assert again.stamp_s > still.stamp_s and float(np.abs(again.velocity_rad_s).max()) > 0.05
    finally:
        node.destroy_node()
        backend.close()
