"""launch_testing integration test of the package's launch file (run by `launch_test`, the
ROS-standard way; tests/ros/test_ros_launch_testing.py runs it in CI).

The graph comes up from ``captain.launch.py`` (fake backend, recorder on), the robot node is
active, the policy node's action server answers one short RunEpisode goal with live feedback,
and after shutdown every process exited cleanly.
"""

import os
import tempfile
import time
import unittest

import launch
import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
import rclpy
from ament_index_python.packages import get_package_share_directory
from captain_ros_interfaces.action import RunEpisode
from launch.launch_description_sources import PythonLaunchDescriptionSource
from lifecycle_msgs.srv import GetState

from captain_ros.ros.action_client import ActionClient
from captain_ros.ros.qos import FEEDBACK_QOS

OUT = tempfile.mkdtemp(prefix="captain_launch_test_")


@pytest.mark.launch_test
def generate_test_description():
    launch_file = os.path.join(
        get_package_share_directory("captain_ros"), "launch", "captain.launch.py"
    )
    return launch.LaunchDescription(
        [
            launch.actions.IncludeLaunchDescription(
                PythonLaunchDescriptionSource(launch_file),
                launch_arguments={
                    "backend": "fake",
                    "bag_dir": os.path.join(OUT, "bags"),
                    "allowed_root": OUT,
                }.items(),
            ),  # goals write under OUT
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestGraph(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("captain_launch_test")

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def _wait(self, future, timeout_s):
        deadline = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.1)
        self.assertTrue(future.done(), "no answer in time")
        return future.result()

    def test_robot_node_is_active(self):
        client = self.node.create_client(GetState, "/captain_robot/get_state")
        self.assertTrue(client.wait_for_service(timeout_sec=120.0))
        state = self._wait(client.call_async(GetState.Request()), 30.0)
        self.assertEqual(state.current_state.label, "active")

    def test_one_episode_with_feedback(self):
        client = ActionClient(
            self.node, RunEpisode, "/captain/run_episode", feedback_sub_qos_profile=FEEDBACK_QOS
        )
        self.assertTrue(client.wait_for_server(timeout_sec=120.0))
        feedback = []
        goal = RunEpisode.Goal(
            task="pick_place", seed=9, max_requests=3, output_dir=os.path.join(OUT, "ep")
        )
        handle = self._wait(client.send_goal_async(goal, feedback_callback=feedback.append), 60.0)
        self.assertTrue(handle.accepted)
        result = self._wait(handle.get_result_async(), 300.0).result
        self.assertEqual(result.requests, 3)
        self.assertEqual(result.outcome_label, "budget_exhausted")
        self.assertEqual(sum(len(f.feedback.receipts) for f in feedback), result.calls)
        self.assertTrue(os.path.isfile(os.path.join(OUT, "ep", "summary.json")))


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_processes_exit_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0, -2, -15])
