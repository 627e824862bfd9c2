"""Policy node: hosts the policy and the harness session; runs episodes as a ROS action.

``/captain/run_episode`` (``RunEpisode``): the goal names task, seed, policy and budgets; the node
asks the robot node to load that scene, then runs the goal's
:class:`~captain_ros.harness.episode.setup.EpisodeSetup` (the same assembly as ``captain run``) with a
:class:`~captain_ros.ros.calls.RosRobotCaller`, so every robot call of the policy's code crosses
the ROS graph. Every call's receipt is published on ``/captain/receipts`` the moment it returns and
sent as action feedback with the progress; in simulation the hidden per-request records go to
``/captain/privileged`` (an emulated rig's ground truth judges the final state only); episode
start/end go to ``/captain/episode_events`` (the recorder opens/closes the episode's bag on them).
Every count in the result is this episode's alone.

Cancel is clean: no further policy request is made, robot calls still in the current cell are
refused with ``budget_exhausted`` ("episode canceled"), the call in flight finishes (guarded), the
session is closed and the goal ends as canceled with the partial counts.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from captain_ros_interfaces.action import RunEpisode
from captain_ros_interfaces.msg import EpisodeEvent, Receipt
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Bool, String

from captain_ros.bags.messages import TRAJECTORY_TOPIC
from captain_ros.core.result import Result
from captain_ros.evaluation.episode import episode_setup
from captain_ros.evaluation.observers import RuntimeObserver
from captain_ros.harness.episode.observers import EpisodeObserver
from captain_ros.harness.episode.profiles import resolve_profile
from captain_ros.harness.episode.setup import EpisodeSetup
from captain_ros.report.observer import ReportObserver
from captain_ros.ros.calls import RosRobotCaller, call_sync
from captain_ros.ros.credential import Signer, Verifier, load_key
from captain_ros.ros.episode_glue import CancelObserver, GoalObserver, StopWhen
from captain_ros.ros.episode_goal import call_refusal, fill_result, goal_config, new_episode_id
from captain_ros.ros.episode_window import EpisodeWindow
from captain_ros.ros.estop import ESTOP_RESET_SRV, ESTOP_STATE_TOPIC, LATCHED_QOS
from captain_ros.ros.liveness import Heartbeat, Liveness
from captain_ros.ros.params import declare
from captain_ros.ros.policy_params import PARAMS, ROBOT_HEARTBEAT_WAIT_S
from captain_ros.ros.publish_log import PublishLog
from captain_ros.ros.qos import FEEDBACK_QOS
from captain_ros.ros.recorder_watch import RecorderWatch
from captain_ros.ros.robot_link import NO_BACKEND, RobotLink
from captain_ros.ros.robot_params import HARDWARE_BACKENDS


class PolicyNode(Node):
    executor_threads = 4  # calls/e-stop served while a long callback runs

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("captain_policy", **kwargs)
        self.p = declare(self, PARAMS)
        group = ReentrantCallbackGroup()
        self.publish_log = PublishLog(self, callback_group=group)
        self.receipt_pub = self.publish_log.publisher(Receipt, "/captain/receipts", 1000)
        self.event_pub = self.publish_log.publisher(EpisodeEvent, "/captain/episode_events", 100)
        self.window = EpisodeWindow(self, self.event_pub, self.publish_log)
        self.privileged_pub = self.publish_log.publisher(String, "/captain/privileged", 1000)
        self.trajectory_pub = self.publish_log.publisher(String, TRAJECTORY_TOPIC, 1000)
        self.heartbeat = Heartbeat(self, "policy")
        self.robot_alive = Liveness(self, "robot", group)
        self._robot_instance = ""  # the robot process the running episode started with
        self._stopping = threading.Event()  # set by stop(): this process is shutting down
        self.caller = RosRobotCaller(self, self.p["call_timeout_s"], group, give_up=self._lost)
        self.verifier: Verifier | None = None
        signer = None
        if self.p["key_file"]:  # the secured graph: checked goals, signed commands
            key = load_key(self.p["key_file"])
            self.verifier, self.caller.signer, signer = Verifier(key), Signer(key), Signer(key)
        self.robot = RobotLink(self, group, signer)
        self.privileged, self.snapshot = self.robot.privileged, self.robot.snapshot
        self.recorder = RecorderWatch(self, self.p["bag_wait_s"], group, self.p["expect_recorder"])
        self.estop_latched = False
        self.create_subscription(
            Bool, ESTOP_STATE_TOPIC, self._on_estop_state, LATCHED_QOS, callback_group=group
        )
        self._busy = threading.Lock()
        self._goal: Any = None
        self._backend_name = "unknown"
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
        return GoalResponse.REJECT if self._busy.locked() else GoalResponse.ACCEPT

    def _refuse_when_canceled(self, name: str, kwargs: dict[str, Any]) -> Result | None:
        canceled = self._goal is not None and self._goal.is_cancel_requested
        return call_refusal(name, canceled, None if canceled else self._lost())

    def _lost(self) -> str | None:
        """Why the running episode cannot go on: its robot process died (or was replaced by a
        respawn), or this node is shutting down; None while it can."""
        if self._stopping.is_set():
            return "the policy node is shutting down"
        if self._goal is None:
            return None
        return self.robot_alive.lost_since(self._robot_instance)

    def _call(self, client: Any, request: Any, timeout_s: float) -> Any:
        """``call_sync`` that stops waiting once the episode is lost (a dead robot process
        never answers; a respawned one never saw the request)."""
        return call_sync(client, request, timeout_s, give_up=lambda: self._lost() is not None)

    def stop(self) -> None:
        """Shutting down (SIGINT/SIGTERM): the running episode ends at once, its calls in flight
        stop waiting, and the goal is answered (``node_shutdown``)."""
        self._stopping.set()

    # --- episode -------------------------------------------------------------------------------
    def _execute(self, goal_handle: Any) -> RunEpisode.Result:
        if self.verifier is not None:
            why = self.verifier.check_goal(goal_handle.request, bytes(goal_handle.goal_id.uuid))
            if why is not None:
                return self._abort(
                    goal_handle,
                    RunEpisode.Result(),
                    "unauthenticated",
                    f"goal refused: {why}; nothing was executed",
                )
        with self._busy:
            return self._run(goal_handle)

    def _abort(
        self, goal_handle: Any, res: RunEpisode.Result, label: str, error: str
    ) -> RunEpisode.Result:
        self.get_logger().warning(f"goal aborted ({label}): {error}")
        res.outcome_label, res.summary_json = label, json.dumps({"error": error})
        goal_handle.abort()
        return res

    def _setup(
        self, g: Any, goal_handle: Any, episode_id: str, backend: str
    ) -> tuple[EpisodeSetup, GoalObserver]:
        """The goal's episode, assembled like every other front end's (raises on a bad goal)."""
        from captain_ros.policy.factory import make_policy
        from captain_ros.policy.students import expand_policy
        from captain_ros.tasks import get_task

        config = goal_config(g, self.p, backend, episode_id)  # raises on a bad goal
        task = get_task(config.task, backend)  # a backend's own task names (robosuite's lift)
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
            StopWhen(lambda: self._lost() and self._stop_label()),
            watcher,
            ReportObserver(Path(config.out_dir)),
            RuntimeObserver(policy),
        ]
        privileged, host_success = self.robot.ground_truth(backend, task, self._call)
        setup = episode_setup(
            config,
            self.caller,
            policy,
            profile=resolve_profile(config.profile, expanded.model_folder),
            observers=observers,
            privileged=privileged,
            host_success=host_success,
        )
        setup.prepare()  # before the recorder opens its bag (it may write into the folder)
        return setup, watcher

    def _run(self, goal_handle: Any) -> RunEpisode.Result:
        g = goal_handle.request
        res = RunEpisode.Result()
        episode_id = new_episode_id(g.task, g.seed)
        res.episode_id = episode_id
        if self.estop_latched:  # only an operator's /captain/estop/reset releases it
            return self._abort(
                goal_handle,
                res,
                "estop",
                "the e-stop is latched: an operator must "
                f"release it with {ESTOP_RESET_SRV} before a new episode",
            )
        self._backend_name = self.robot.backend()
        if self._backend_name == "unknown":  # a goal's task names are the backend's (lift)
            return self._abort(goal_handle, res, "robot_not_ready", NO_BACKEND)
        try:
            setup, watcher = self._setup(g, goal_handle, episode_id, self._backend_name)
        except Exception as exc:  # noqa: BLE001 - a bad goal aborts with a reason
            return self._abort(goal_handle, res, "invalid_goal", str(exc))
        loaded = self.robot.load_scene(self._backend_name in HARDWARE_BACKENDS, g.task, int(g.seed))
        if loaded is not None:
            setup.policy.close()
            return self._abort(goal_handle, res, "scene_not_loaded", loaded)
        if not self.robot.set_active_episode(episode_id):
            setup.policy.close()
            return self._abort(
                goal_handle,
                res,
                "robot_not_ready",
                "the robot node did not accept "
                "the episode (its active_episode parameter); nothing was executed",
            )
        if not self.robot_alive.wait_alive(ROBOT_HEARTBEAT_WAIT_S):
            self.robot.set_active_episode("")
            setup.policy.close()
            return self._abort(
                goal_handle,
                res,
                "robot_not_ready",
                "the robot node answered but "
                "its heartbeat (/captain/alive/robot) was not heard within "
                f"{ROBOT_HEARTBEAT_WAIT_S:g} s; nothing was executed",
            )
        self._robot_instance = self.robot_alive.instance
        self._goal = goal_handle
        self.caller.episode_id, self.caller.refuse = episode_id, self._refuse_when_canceled
        self.caller.request_index_fn = lambda: watcher.request
        # a recorder still discovering the graph, or a respawned robot's publishers, would miss
        # the window's first messages: wait until it is ready for this very robot process
        self.recorder.wait_ready(
            lambda: (
                self.event_pub.get_subscription_count() > 0
                and self.recorder.status.get("robot", self._robot_instance) == self._robot_instance
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
            return self._abort(goal_handle, res, "internal_error", repr(exc))
        finally:
            lost = self._lost()
            self._close_episode(episode_id, watcher.calls, start_ns, lost)
            setup.policy.close()
        res.outcome_label = (
            "canceled"
            if goal_handle.is_cancel_requested
            else self._stop_label()
            if lost
            else record.outcome
        )
        bag = self.recorder.bag_closed(episode_id, bag_open)
        fill_result(res, record, watcher.failures, bag, lost, setup.out_dir)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif lost:
            self.get_logger().error(f"episode {episode_id} ended early: {lost}")
            goal_handle.abort()
        else:
            goal_handle.succeed()
        return res

    def _close_episode(self, episode_id: str, calls: int, start_ns: int, lost: str | None) -> None:
        """End the episode's window for the recorder (a lost one at once: no counts) and close
        the robot's episode gate (a dead robot process has none to close)."""
        self.window.close(episode_id, calls, start_ns, lost)
        self._goal, self.caller.refuse = None, None
        if lost is None or self.robot_alive.alive and not self._stopping.is_set():
            self.robot.set_active_episode("")  # the robot refuses calls until the next goal

    def _stop_label(self) -> str:
        return "node_shutdown" if self._stopping.is_set() else "robot_lost"


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [PolicyNode()])


if __name__ == "__main__":
    raise SystemExit(main())
