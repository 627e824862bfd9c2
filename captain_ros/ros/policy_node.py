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
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from captain_ros_interfaces.action import RunEpisode
from captain_ros_interfaces.msg import EpisodeEvent, Receipt
from captain_ros_interfaces.srv import LoadScene, Snapshot
from captain_ros_interfaces.srv import PrivilegedState as PrivilegedStateSrv
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from std_msgs.msg import Bool, String

from captain_ros.bags.messages import TRAJECTORY_TOPIC
from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.result import FailureCategory, Result
from captain_ros.evaluation.episode import SIM_BACKENDS, episode_setup
from captain_ros.evaluation.observers import RuntimeObserver
from captain_ros.harness.episode.observers import EpisodeObserver
from captain_ros.harness.episode.profiles import PROFILES, resolve_profile
from captain_ros.harness.episode.setup import EpisodeSetup
from captain_ros.report.observer import ReportObserver
from captain_ros.ros.calls import RosRobotCaller, call_sync
from captain_ros.ros.credential import Signer, Verifier, load_key
from captain_ros.ros.episode_glue import CancelObserver, GoalObserver, ServicePrivileged, StopWhen
from captain_ros.ros.episode_goal import goal_config
from captain_ros.ros.episode_window import EpisodeWindow
from captain_ros.ros.estop import ESTOP_RESET_SRV, ESTOP_STATE_TOPIC, LATCHED_QOS
from captain_ros.ros.liveness import Heartbeat, Liveness
from captain_ros.ros.params import Param, declare
from captain_ros.ros.publish_log import PublishLog
from captain_ros.ros.qos import FEEDBACK_QOS
from captain_ros.ros.recorder_watch import RecorderWatch
from captain_ros.ros.robot_node import HARDWARE_BACKENDS
from captain_ros.ros.secure import SignedClient

HARDWARE_TRUTH_WAIT_S = 2.0
"""How long a goal on a hardware backend looks for an emulated rig's ``privileged_state`` [s] (the
robot node's parameter services, discovered with it, were found already)."""

ROBOT_HEARTBEAT_WAIT_S = 5.0
"""How long a goal waits to hear the robot process's heartbeat once its parameter services
answered [s]: a respawned robot answers before this node's liveliness reader has its instance."""

PARAMS = (
    Param(
        "policy",
        "scripted",
        "Default policy when a goal leaves it empty (scripted | openai | "
        "transformers | replay:FILE).",
    ),
    Param(
        "model_folder",
        "",
        "Student folder of the transformers policy (empty: the packaged SmolLM2).",
    ),
    Param(
        "engine",
        "auto",
        "Inference engine of the transformers policy (auto | llamacpp | "
        "transformers; docs/engines.md).",
        choices=("auto", "llamacpp", "transformers"),
    ),
    Param(
        "profile",
        "auto",
        "Prompt profile (default | compact | helpers | student; auto: the one "
        "the student in model_folder was trained with, else default).",
        choices=("auto", *PROFILES),
    ),
    Param("output_root", "runs/ros", "Folder of episode folders when a goal gives no output_dir."),
    Param(
        "allowed_root",
        "",
        "Folder that a goal's output_dir and a goal's replay:FILE must lie "
        "under (symlinks resolved); '' = output_root.",
    ),
    Param(
        "key_file",
        "",
        "Secured graph: the deployment's key file (0600). Goals must then carry "
        "its credential (captain ros goal --key-file), and this node signs its robot calls, "
        "scene loads and snapshots ('' = open graph; docs/ros.md).",
    ),
    Param(
        "overwrite_output",
        False,
        "Replace a non-empty episode folder instead of refusing the goal.",
    ),
    Param("call_timeout_s", 120.0, "Longest wait for one robot call [s].", 1.0, 3600.0),
    Param(
        "expect_recorder",
        False,
        "A recorder is part of the graph (set by the launch file): the "
        "first goal waits for it to be discovered instead of reporting no bag.",
    ),
    Param(
        "bag_wait_s",
        15.0,
        "Longest wait for the recorder to close the episode's bag [s] "
        "(longer than the recorder's close_grace_s).",
        0.0,
        120.0,
    ),
)


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
        self.load_scene: Any = self.create_client(
            LoadScene, "/captain/robot/load_scene", callback_group=group
        )
        self.privileged: Client[Any, Any] = self.create_client(
            PrivilegedStateSrv, "/captain/robot/privileged_state", callback_group=group
        )
        self.snapshot: Any = self.create_client(
            Snapshot, "/captain/robot/snapshot", callback_group=group
        )
        self.verifier: Verifier | None = None
        if self.p["key_file"]:  # the secured graph: checked goals, signed commands
            key = load_key(self.p["key_file"])
            self.verifier, self.caller.signer = Verifier(key), Signer(key)
            self.load_scene = SignedClient(self, "load_scene", LoadScene, Signer(key), group)
            self.snapshot = SignedClient(self, "snapshot", Snapshot, Signer(key), group)
        self.recorder = RecorderWatch(self, self.p["bag_wait_s"], group, self.p["expect_recorder"])
        self.robot_params = AsyncParameterClient(self, "captain_robot", callback_group=group)
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
        if self._goal is not None and self._goal.is_cancel_requested:
            return Result.fail(
                FailureCategory.BUDGET_EXHAUSTED,
                f"{name}: the episode was canceled by the operator; nothing was "
                "executed. Stop issuing robot calls.",
            )
        lost = self._lost()
        if lost is not None:
            return Result.fail(
                FailureCategory.HARDWARE,
                f"{name}: {lost}; nothing was executed. "
                "The episode is ending: stop issuing robot calls.",
            )
        return None

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
        self, g: Any, goal_handle: Any, episode_id: str
    ) -> tuple[EpisodeSetup, GoalObserver]:
        """The goal's episode, assembled like every other front end's (raises on a bad goal)."""
        from captain_ros.policy.factory import make_policy
        from captain_ros.policy.students import expand_policy
        from captain_ros.tasks import get_task

        backend = self._backend_name = self._robot_backend()
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
        # a simulation's ground truth is mandatory: wait for its services (discovery after a
        # fresh launch can lag the action server); hardware has none
        sim = backend in SIM_BACKENDS and self.privileged.wait_for_service(timeout_sec=10.0)
        if backend in SIM_BACKENDS and not sim:
            raise InvalidArgumentError(
                f"the {backend} robot node offers no privileged_state service"
            )
        setup = episode_setup(
            config,
            self.caller,
            policy,
            profile=resolve_profile(config.profile, expanded.model_folder),
            observers=observers,
            privileged=ServicePrivileged(self.privileged, self.snapshot, self._call)
            if sim
            else None,
            host_success=None if sim else self._emulated_host_success(task),
        )
        setup.prepare()  # before the recorder opens its bag (it may write into the folder)
        return setup, watcher

    def _emulated_host_success(self, task: Any) -> Callable[[], bool] | None:
        """An emulated rig's ground truth judges the final state only (no per-request records:
        its bags stay those of the real rig); a real rig offers no ``privileged_state``."""
        if not self.privileged.wait_for_service(timeout_sec=HARDWARE_TRUTH_WAIT_S):
            return None
        source = ServicePrivileged(self.privileged, self.snapshot, self._call)
        return lambda: bool(task.success(source.state()))

    def _run(self, goal_handle: Any) -> RunEpisode.Result:
        g = goal_handle.request
        res = RunEpisode.Result()
        episode_id = f"{g.task}_{g.seed}_{time.strftime('%Y%m%dT%H%M%S')}_{int(time.time() * 1000) % 1000:03d}"
        res.episode_id = episode_id
        if self.estop_latched:  # only an operator's /captain/estop/reset releases it
            return self._abort(
                goal_handle,
                res,
                "estop",
                "the e-stop is latched: an operator must "
                f"release it with {ESTOP_RESET_SRV} before a new episode",
            )
        try:
            setup, watcher = self._setup(g, goal_handle, episode_id)
        except Exception as exc:  # noqa: BLE001 - a bad goal aborts with a reason
            return self._abort(goal_handle, res, "invalid_goal", str(exc))
        loaded = self._load_scene(g.task, int(g.seed))
        if loaded is not None:
            setup.policy.close()
            return self._abort(goal_handle, res, "scene_not_loaded", loaded)
        if not self._set_active_episode(episode_id):
            setup.policy.close()
            return self._abort(
                goal_handle,
                res,
                "robot_not_ready",
                "the robot node did not accept "
                "the episode (its active_episode parameter); nothing was executed",
            )
        if not self.robot_alive.wait_alive(ROBOT_HEARTBEAT_WAIT_S):
            self._set_active_episode("")
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
        res.host_success, res.strict_success = record.host_success, record.strict_success
        res.requests, res.calls = record.requests, record.robot_calls
        res.physical_actions, res.wall_time_s = record.physical_actions, record.wall_s
        res.failures = watcher.failures
        bag = self.recorder.bag_closed(episode_id, bag_open)
        res.bag_path, res.bag_complete, res.bag_status = bag.path, bag.complete, bag.status
        if bag.path:
            record = replace(
                record,
                bag_path=bag.path,
                bag_complete=bag.complete,
                extra={**record.extra, "bag_status": bag.status},
            )
            record.write(EpisodeFiles(setup.out_dir).summary)
        res.summary_json = json.dumps(
            {**record.to_dict(), **({"error": lost} if lost else {})}, default=str
        )
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
            self._set_active_episode("")  # the robot refuses calls until the next goal

    def _stop_label(self) -> str:
        return "node_shutdown" if self._stopping.is_set() else "robot_lost"

    def _set_active_episode(self, episode_id: str) -> bool:
        """Open (or with ``""`` close) the robot node's episode gate; True once it is applied."""
        if not self.robot_params.wait_for_services(timeout_sec=10.0):
            return False
        done = threading.Event()
        future = self.robot_params.set_parameters([Parameter("active_episode", value=episode_id)])
        future.add_done_callback(lambda _f: done.set())
        reply = future.result() if done.wait(5.0) else None
        return reply is not None and all(r.successful for r in reply.results)

    def _robot_backend(self) -> str:
        """The robot node's ``backend`` parameter (what the record names as backend)."""
        if not self.robot_params.wait_for_services(timeout_sec=10.0):
            return "unknown"
        done = threading.Event()
        future = self.robot_params.get_parameters(["backend"])
        future.add_done_callback(lambda _f: done.set())
        reply = future.result() if done.wait(2.0) else None
        if reply is None or not reply.values:
            return "unknown"
        return str(reply.values[0].string_value or "unknown")

    def _load_scene(self, task: str, seed: int) -> str | None:
        if self._backend_name in HARDWARE_BACKENDS and not self.load_scene.wait_for_service(
            timeout_sec=HARDWARE_TRUTH_WAIT_S
        ):
            return (
                None  # a real rig serves no load_scene (debug_services): its scene is the table's
            )
        if not self.load_scene.wait_for_service(timeout_sec=10.0):
            return "the robot node is not running (no /captain/robot/load_scene)"
        resp = call_sync(self.load_scene, LoadScene.Request(task=task, seed=seed), 120.0)
        if resp is None or not resp.success:
            return resp.message if resp is not None else "load_scene timed out"
        return None


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [PolicyNode()])


if __name__ == "__main__":
    raise SystemExit(main())
