"""Policy node: hosts the policy and the harness session; runs episodes as a ROS action.

``/captain/run_episode`` (``RunEpisode``): the goal names task, seed, policy and budgets; the node
asks the robot node to load that scene, then runs the goal's episode (assembled as ``captain run``
does, :mod:`~captain_ros.ros.goal_episode`) with a :class:`~captain_ros.ros.calls.RosRobotCaller`,
so every robot call of the policy's code crosses the ROS graph. Every call's receipt is published on ``/captain/receipts`` the moment it returns and
sent as action feedback with the progress; in simulation the hidden per-request records go to
``/captain/privileged`` (an emulated rig's ground truth judges the final state only); episode
start/end go to ``/captain/episode_events`` (the recorder opens/closes the episode's bag on them).
Every count in the result is this episode's alone.

Cancel is clean: no further policy request is made, robot calls still in the current cell are
refused with ``budget_exhausted`` ("episode canceled"), the call in flight finishes (guarded), the
session is closed and the goal ends as canceled with the partial counts. The goal's bookkeeping
is :mod:`~captain_ros.ros.goal_slot`, its refusals and answer :mod:`~captain_ros.ros.goal_answer`.
"""

from __future__ import annotations

from typing import Any

from captain_ros_interfaces.action import RunEpisode
from captain_ros_interfaces.msg import EpisodeEvent
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Bool

from captain_ros.harness.episode.setup import EpisodeSetup
from captain_ros.ros.calls import RosRobotCaller, call_sync
from captain_ros.ros.credential import Signer, Verifier, load_key
from captain_ros.ros.episode_glue import GoalObserver
from captain_ros.ros.episode_goal import new_episode_id
from captain_ros.ros.episode_window import EpisodeWindow
from captain_ros.ros.estop import ESTOP_RESET_SRV, ESTOP_STATE_TOPIC, LATCHED_QOS
from captain_ros.ros.goal_answer import (
    NO_BACKEND,
    Refusal,
    estop_latched,
    fill_result,
    outcome_label,
    refuse,
    settle,
    unauthenticated,
)
from captain_ros.ros.goal_episode import GoalEpisodes
from captain_ros.ros.goal_slot import GoalSlot
from captain_ros.ros.liveness import Heartbeat, Liveness
from captain_ros.ros.params import declare
from captain_ros.ros.policy_params import PARAMS
from captain_ros.ros.publish_log import PublishLog
from captain_ros.ros.qos import FEEDBACK_QOS
from captain_ros.ros.recorder_watch import RecorderWatch
from captain_ros.ros.robot_link import RobotLink
from captain_ros.ros.robot_params import HARDWARE_BACKENDS


class PolicyNode(Node):
    executor_threads = 4  # calls/e-stop served while a long callback runs

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("captain_policy", **kwargs)
        self.p = declare(self, PARAMS)
        group = ReentrantCallbackGroup()
        self.publish_log = PublishLog(self, callback_group=group)
        self.event_pub = self.publish_log.publisher(EpisodeEvent, "/captain/episode_events", 100)
        self.window = EpisodeWindow(self, self.event_pub, self.publish_log)
        self.heartbeat = Heartbeat(self, "policy")
        self.robot_alive = Liveness(self, "robot", group)
        self.goals = GoalSlot(self.robot_alive.lost_since)
        self.caller = RosRobotCaller(self, self.p["call_timeout_s"], group, give_up=self.goals.lost)
        self.verifier: Verifier | None = None
        signer = None
        if self.p["key_file"]:  # the secured graph: checked goals, signed commands
            key = load_key(self.p["key_file"])
            self.verifier, self.caller.signer, signer = Verifier(key), Signer(key), Signer(key)
        self.robot = RobotLink(self, group, signer)
        self.episodes = GoalEpisodes(
            self.publish_log, self.p, self.caller, self.robot, self.goals.stop_reason, self._call
        )
        self.recorder = RecorderWatch(self, self.p["bag_wait_s"], group, self.p["expect_recorder"])
        self.estop_latched = False
        self.create_subscription(
            Bool, ESTOP_STATE_TOPIC, self._on_estop_state, LATCHED_QOS, callback_group=group
        )
        self.server = ActionServer(
            self,
            RunEpisode,
            "/captain/run_episode",
            self._execute,
            goal_callback=self._on_goal,
            cancel_callback=lambda _g: CancelResponse.ACCEPT,
            callback_group=group,
            feedback_pub_qos_profile=FEEDBACK_QOS,
        )

    def _on_estop_state(self, msg: Bool) -> None:
        self.estop_latched = bool(msg.data)

    def _on_goal(self, goal: RunEpisode.Goal) -> GoalResponse:
        return GoalResponse.REJECT if self.goals.busy.locked() else GoalResponse.ACCEPT

    def _call(self, client: Any, request: Any, timeout_s: float) -> Any:
        """``call_sync`` that stops waiting once the episode is lost (a dead robot process
        never answers; a respawned one never saw the request)."""
        return call_sync(client, request, timeout_s, give_up=lambda: self.goals.lost() is not None)

    def stop(self) -> None:
        """Shutting down (SIGINT/SIGTERM): the running episode ends at once, its calls in flight
        stop waiting, and the goal is answered (``node_shutdown``)."""
        self.goals.stop()

    # --- episode -------------------------------------------------------------------------------
    def _execute(self, goal_handle: Any) -> RunEpisode.Result:
        if self.verifier is not None:
            why = self.verifier.check_goal(goal_handle.request, bytes(goal_handle.goal_id.uuid))
            if why is not None:
                return self._refuse(goal_handle, RunEpisode.Result(), unauthenticated(why))
        with self.goals.busy:
            return self._run(goal_handle)

    def _refuse(self, goal_handle: Any, res: RunEpisode.Result, why: Refusal) -> RunEpisode.Result:
        return refuse(goal_handle, res, why, self.get_logger().warning)

    def _run(self, goal_handle: Any) -> RunEpisode.Result:
        g = goal_handle.request
        res = RunEpisode.Result()
        res.episode_id = episode_id = new_episode_id(g.task, g.seed)
        if self.estop_latched:  # only an operator's /captain/estop/reset releases it
            return self._refuse(goal_handle, res, estop_latched(ESTOP_RESET_SRV))
        backend = self.robot.backend()
        if backend == "unknown":  # a goal's task names are the backend's (lift)
            return self._refuse(goal_handle, res, NO_BACKEND)
        try:
            setup, watcher = self.episodes.build(goal_handle, episode_id, backend)
        except Exception as exc:  # noqa: BLE001 - a bad goal aborts with a reason
            return self._refuse(goal_handle, res, Refusal("invalid_goal", str(exc)))
        hardware = backend in HARDWARE_BACKENDS
        why = self.robot.open_episode(hardware, g.task, int(g.seed), episode_id, self.robot_alive)
        if why is not None:
            setup.policy.close()
            return self._refuse(goal_handle, res, why)
        return self._episode(goal_handle, res, setup, watcher)

    def _episode(
        self, goal_handle: Any, res: RunEpisode.Result, setup: EpisodeSetup, watcher: GoalObserver
    ) -> RunEpisode.Result:
        """Run the goal's episode inside its window for the recorder; answer the goal."""
        g, episode_id = goal_handle.request, res.episode_id
        self.goals.open(goal_handle, self.robot_alive.instance)
        self.caller.episode_id, self.caller.refuse = episode_id, self.goals.call_refusal
        self.caller.request_index_fn = lambda: watcher.request
        # a recorder still discovering the graph, or a respawned robot's publishers, would miss
        # the window's first messages: wait until it is ready for this very robot process
        self.recorder.wait_ready(
            lambda: (
                self.event_pub.get_subscription_count() > 0
                and self.recorder.status.get("robot", self.goals.robot_instance)
                == self.goals.robot_instance
            )
        )
        start_ns = self.window.event(
            episode_id, "start", {"task": g.task, "seed": g.seed, "out_dir": str(setup.out_dir)}
        )
        bag_open = self.recorder.bag_opened(episode_id)
        try:
            record = setup.run()
        except Exception as exc:  # noqa: BLE001 - the node survives a harness failure
            self.get_logger().error(f"episode {episode_id} failed: {exc!r}")
            return self._refuse(goal_handle, res, Refusal("internal_error", repr(exc)))
        finally:
            lost = self.goals.lost()
            self._close_episode(episode_id, watcher.calls, start_ns, lost)
            setup.policy.close()
        canceled = goal_handle.is_cancel_requested
        res.outcome_label = outcome_label(canceled, lost, self.goals.stop_label(), record.outcome)
        bag = self.recorder.bag_closed(episode_id, bag_open)
        fill_result(res, record, watcher.failures, bag, lost, setup.out_dir)
        settle(goal_handle, episode_id, lost, self.get_logger().error)
        return res

    def _close_episode(self, episode_id: str, calls: int, start_ns: int, lost: str | None) -> None:
        """End the episode's window for the recorder (a lost one at once: no counts) and close
        the robot's episode gate (a dead robot process has none to close)."""
        self.window.close(episode_id, calls, start_ns, lost)
        self.caller.refuse = None
        if self.goals.close(lost, self.robot_alive.alive):
            self.robot.set_active_episode("")  # the robot refuses calls until the next goal


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [PolicyNode()])


if __name__ == "__main__":
    raise SystemExit(main())
