"""Policy node: hosts the policy and the harness session; runs episodes as a ROS action.

``/captain/run_episode`` (``RunEpisode``): the goal names task, seed, policy and budgets; the node
asks the robot node to load that scene, then runs :func:`captain_ros.harness.episode.run_episode`
with a :class:`~captain_ros.ros.calls.RosRobotCaller`, so every robot call of the policy's code
crosses the ROS graph. Every call's receipt is published on ``/captain/receipts`` the moment it
returns and sent as action feedback with the progress; episode start/end go to
``/captain/episode_events`` (the recorder opens/closes the episode's bag on them).

Cancel is clean: no further policy request is made, robot calls still in the current cell are
refused with ``budget_exhausted`` ("episode canceled"), the call in flight finishes (guarded), the
session is closed and the goal ends as canceled with the partial counts.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from captain_ros_interfaces.action import RunEpisode
from captain_ros_interfaces.msg import EpisodeEvent, Receipt
from captain_ros_interfaces.srv import LoadScene
from captain_ros_interfaces.srv import PrivilegedState as PrivilegedStateSrv
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.result import FailureCategory, Result
from captain_ros.ros import convert
from captain_ros.ros.calls import RosRobotCaller, _call_sync
from captain_ros.ros.episode_glue import CancellablePolicy
from captain_ros.ros.params import Param, declare
from captain_ros.ros.recorder_watch import RecorderWatch

PARAMS = (
    Param("policy", "scripted", "Default policy when a goal leaves it empty (scripted | openai | "
          "transformers | replay:FILE)."),
    Param("output_root", "runs/ros", "Folder of episode folders when a goal gives no output_dir."),
    Param("call_timeout_s", 120.0, "Longest wait for one robot call [s].", 1.0, 3600.0),
    Param("bag_wait_s", 10.0, "Longest wait for the recorder to close the episode's bag [s] "
          "(longer than the recorder's close_grace_s).", 0.0, 120.0),
)


class PolicyNode(Node):

    executor_threads = 4  # calls/e-stop served while a long callback runs
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("captain_policy", **kwargs)
        self.p = declare(self, PARAMS)
        group = ReentrantCallbackGroup()
        self.receipt_pub = self.create_publisher(Receipt, "/captain/receipts", 100)
        self.event_pub = self.create_publisher(EpisodeEvent, "/captain/episode_events", 100)
        self.caller = RosRobotCaller(self, self.p["call_timeout_s"], None, group)
        self.load_scene = self.create_client(LoadScene, "/captain/robot/load_scene", callback_group=group)
        self.privileged = self.create_client(PrivilegedStateSrv, "/captain/robot/privileged_state",
                                             callback_group=group)
        self.recorder = RecorderWatch(self, self.p["bag_wait_s"], group)
        self._busy = threading.Lock()
        self._goal: Any = None
        self._calls, self._max_requests = 0, 1
        self._policy: CancellablePolicy | None = None
        self.server = ActionServer(self, RunEpisode, "/captain/run_episode", self._execute,
                                   goal_callback=self._on_goal, cancel_callback=lambda _g: CancelResponse.ACCEPT,
                                   callback_group=group)

    def _on_goal(self, goal: RunEpisode.Goal) -> GoalResponse:
        return GoalResponse.REJECT if self._busy.locked() else GoalResponse.ACCEPT

    # --- per call ------------------------------------------------------------------------------
    def _on_result(self, name: str, kwargs: dict[str, Any], result: Result, duration_s: float) -> None:
        goal = self._goal
        if goal is None:
            return
        self._calls += 1
        request = self._policy.requests if self._policy else 0
        msg = convert.result_to_receipt(result, name, episode_id=self.caller.episode_id,
                                        request_index=request, call_index=self._calls,
                                        stamp_s=time.time(), duration_s=duration_s)
        self.receipt_pub.publish(msg)
        budget = max(1, self._max_requests)
        goal.publish_feedback(RunEpisode.Feedback(
            receipts=[msg], requests_done=request, calls_done=self._calls,
            progress=min(1.0, request / budget), phase="running"))

    def _refuse_when_canceled(self, name: str, kwargs: dict[str, Any]) -> Result | None:
        if self._goal is not None and self._goal.is_cancel_requested:
            return Result.fail(FailureCategory.BUDGET_EXHAUSTED,
                               f"{name}: the episode was canceled by the operator; nothing was "
                               "executed. Stop issuing robot calls.")
        return None

    # --- episode -------------------------------------------------------------------------------
    def _execute(self, goal_handle: Any) -> RunEpisode.Result:
        with self._busy:
            return self._run(goal_handle)

    def _run(self, goal_handle: Any) -> RunEpisode.Result:
        from captain_ros.harness.budgets import Budgets
        from captain_ros.harness.episode import run_episode
        from captain_ros.policy.factory import make_policy
        from captain_ros.report.html import write_report
        from captain_ros.tasks import get_task

        g = goal_handle.request
        res = RunEpisode.Result()
        episode_id = f"{g.task}_{g.seed}_{time.strftime('%Y%m%dT%H%M%S')}_{int(time.time() * 1000) % 1000:03d}"
        res.episode_id = episode_id
        try:
            task = get_task(g.task)
            defaults = Budgets()
            budgets = Budgets(max_requests=g.max_requests or defaults.max_requests,
                              max_wall_s=g.max_wall_time_s or defaults.max_wall_s,
                              max_physical_actions=g.max_physical_actions or defaults.max_physical_actions)
            policy = make_policy(g.policy or self.p["policy"])
        except Exception as exc:  # noqa: BLE001 - a bad goal aborts with a reason
            res.outcome_label, res.summary_json = "invalid_goal", json.dumps({"error": str(exc)})
            goal_handle.abort()
            return res
        loaded = self._load_scene(g.task, int(g.seed))
        if loaded is not None:
            res.outcome_label, res.summary_json = "scene_not_loaded", json.dumps({"error": loaded})
            goal_handle.abort()
            return res
        out_dir = Path(g.output_dir or Path(self.p["output_root"]) / episode_id)
        self._goal, self._calls, self._max_requests = goal_handle, 0, budgets.max_requests
        self._policy = CancellablePolicy(policy, lambda: goal_handle.is_cancel_requested)
        self.caller.episode_id, self.caller.refuse = episode_id, self._refuse_when_canceled
        self.caller.request_index_fn = lambda: self._policy.requests if self._policy else 0
        self._event(episode_id, "start", {"task": g.task, "seed": g.seed, "out_dir": str(out_dir)})
        bag_open = self.recorder.bag_opened(episode_id)
        try:
            summary = run_episode(task, int(g.seed), self.caller, self._policy, budgets, out_dir,
                                  host_success=self._host_success(task), on_call=self._on_result)
        except Exception as exc:  # noqa: BLE001 - the node survives a harness failure
            self.get_logger().error(f"episode {episode_id} failed: {exc!r}")
            res.outcome_label, res.summary_json = "internal_error", json.dumps({"error": repr(exc)})
            goal_handle.abort()
            return res
        finally:
            self._event(episode_id, "end", {"calls": self._calls})
            self._goal, self.caller.refuse = None, None
            policy.close()
        try:  # the same per-request report as `captain run` (reasoning, code, receipts, images)
            write_report(out_dir)
        except Exception as exc:  # noqa: BLE001 - a report problem never fails the episode
            self.get_logger().warning(f"report.html not written for {episode_id}: {exc!r}")
        res.outcome_label = "canceled" if goal_handle.is_cancel_requested else summary.outcome
        res.host_success, res.strict_success = summary.host_success, summary.strict_success
        res.requests, res.calls = summary.requests, summary.robot_calls
        res.physical_actions, res.wall_time_s = summary.physical_actions, summary.wall_s
        res.failures = self.caller.failures
        res.bag_path = self.recorder.bag_closed(bag_open)
        res.summary_json = json.dumps(summary.to_dict(), default=str)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return res

    def _event(self, episode_id: str, event: str, detail: dict[str, Any]) -> None:
        self.event_pub.publish(EpisodeEvent(stamp=self.get_clock().now().to_msg(), episode_id=episode_id,
                                            event=event, detail_json=json.dumps(detail)))

    def _load_scene(self, task: str, seed: int) -> str | None:
        if not self.load_scene.wait_for_service(timeout_sec=10.0):
            return "the robot node is not running (no /captain/robot/load_scene)"
        resp = _call_sync(self.load_scene, LoadScene.Request(task=task, seed=seed), 120.0)
        if resp is None or not resp.success:
            return resp.message if resp is not None else "load_scene timed out"
        return None

    def _host_success(self, task: Any) -> Any:
        def predicate() -> bool:
            resp = _call_sync(self.privileged, PrivilegedStateSrv.Request(), 30.0)
            if resp is None or not resp.success:
                raise RuntimeError("privileged state unavailable (hardware or robot node down)")
            return bool(task.success(PrivilegedState.from_dict(json.loads(resp.state_json))))

        return predicate if self.privileged.service_is_ready() else None


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [PolicyNode()])


if __name__ == "__main__":
    raise SystemExit(main())
