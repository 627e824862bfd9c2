"""The episode of a ``RunEpisode`` goal, assembled like every other front end's
(:class:`GoalEpisodes`).

A goal becomes its :class:`~captain_ros.evaluation.config.EpisodeConfig`
(:func:`~captain_ros.ros.episode_goal.goal_config`), its policy (a shipped student expanded to
its folder), the observers of its episode and the ground truth the robot node offers for its
backend; the composition root's :func:`~captain_ros.evaluation.episode.episode_setup` does the
rest, with the policy node's :class:`~captain_ros.ros.calls.RosRobotCaller`, so every robot call
of the policy's code crosses the ROS graph. The observers publish every receipt on
``/captain/receipts`` (and as action feedback), the hidden per-request records on
``/captain/privileged`` and the trajectory on ``/captain/trajectory``; they stop the episode at a
request boundary once the goal is canceled or the episode lost, and write the report and the
runtime figures into the episode folder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from captain_ros_interfaces.msg import Receipt
from std_msgs.msg import String

from captain_ros.bags.messages import TRAJECTORY_TOPIC
from captain_ros.evaluation.episode import episode_setup
from captain_ros.evaluation.observers import RuntimeObserver
from captain_ros.harness.episode.observers import EpisodeObserver
from captain_ros.harness.episode.profiles import resolve_profile
from captain_ros.harness.episode.setup import EpisodeSetup
from captain_ros.report.observer import ReportObserver
from captain_ros.ros.episode_glue import CancelObserver, GoalObserver, StopWhen
from captain_ros.ros.episode_goal import goal_config
from captain_ros.ros.publish_log import PublishLog
from captain_ros.ros.robot_link import RobotLink


class GoalEpisodes:
    """Builds each goal's episode for the policy node.

    Args:
        publish_log: The node's publish log (the episode's topics are counted for its bag).
        params: The policy node's parameters (a goal's empty fields, the output roots).
        caller: The node's robot caller.
        robot: The node's link to the robot node (its ground truth).
        stop_reason: Why the running episode stops before its next request (None: go on).
        call: The node's ``call_sync`` that gives up once the episode is lost.
    """

    def __init__(
        self,
        publish_log: PublishLog,
        params: Mapping[str, Any],
        caller: Any,
        robot: RobotLink,
        stop_reason: Callable[[], str | None],
        call: Callable[[Any, Any, float], Any],
    ) -> None:
        self.receipt_pub = publish_log.publisher(Receipt, "/captain/receipts", 1000)
        self.privileged_pub = publish_log.publisher(String, "/captain/privileged", 1000)
        self.trajectory_pub = publish_log.publisher(String, TRAJECTORY_TOPIC, 1000)
        self.params, self.caller, self.robot = params, caller, robot
        self.stop_reason, self.call = stop_reason, call

    def build(
        self, goal_handle: Any, episode_id: str, backend: str
    ) -> tuple[EpisodeSetup, GoalObserver]:
        """The episode of ``goal_handle`` on the robot's ``backend``, prepared (its folder
        exists before the recorder opens its bag, which may write into it), and its goal
        observer; raises on a bad goal."""
        from captain_ros.policy.factory import make_policy
        from captain_ros.policy.students import check_student_task, expand_policy
        from captain_ros.tasks import get_task

        config = goal_config(goal_handle.request, self.params, backend, episode_id)
        task = get_task(config.task, backend)  # a backend's own task names (robosuite's lift)
        check_student_task(config.policy.spec, task.name)
        expanded = expand_policy(config.policy)  # a shipped student: its folder
        policy = make_policy(expanded)
        watcher = GoalObserver(
            goal_handle,
            self.receipt_pub,
            self.privileged_pub,
            episode_id,
            config.budgets.budgets().max_requests,
            self.trajectory_pub,
        )
        observers: list[EpisodeObserver] = [
            CancelObserver(lambda: goal_handle.is_cancel_requested),
            StopWhen(self.stop_reason),
            watcher,
            ReportObserver(Path(config.out_dir)),
            RuntimeObserver(policy),
        ]
        privileged, host_success = self.robot.ground_truth(backend, task, self.call)
        setup = episode_setup(
            config,
            self.caller,
            policy,
            profile=resolve_profile(config.profile, expanded.model_folder),
            observers=observers,
            privileged=privileged,
            host_success=host_success,
        )
        setup.prepare()
        return setup, watcher
