"""CoEvolve node: runs CoEvolve over the humanoid controller node, as the RunEpisode action.

``/captain/run_episode`` (``RunEpisode``): ``task`` is the layout (``base``, ``l2``, ``l3``, ``l4``;
empty = the controller's), ``seed`` the scene seed, ``policy`` the roles (``scripted``, ``openai``,
``transformers``), ``max_physical_actions`` the transaction budget (0 = 80), ``output_dir`` the run
folder. The node asks the controller to load the scene, then runs
:class:`~captain_ros.research.coevolve.loop.CoEvolveRun` against
:class:`~captain_ros.ros.humanoid_client.RosHumanoidBridge`, so every command crosses the graph.
Every transaction (with the verifier's evidence), rollback, revision and refusal is published as a
receipt on ``/captain/receipts`` and sent as feedback; start/end go to ``/captain/episode_events``
so the recorder bags the run. Cancel ends the run at the next step (label C).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from captain_ros_interfaces.action import RunEpisode
from captain_ros_interfaces.msg import EpisodeEvent, Receipt
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from captain_ros.ros import convert
from captain_ros.ros.params import Param, declare
from captain_ros.ros.qos import FEEDBACK_QOS
from captain_ros.ros.recorder_watch import RecorderWatch

PARAMS = (
    Param(
        "roles",
        "scripted",
        "Default roles when a goal leaves policy empty.",
        choices=("scripted", "openai", "transformers"),
    ),
    Param(
        "output_root", "runs/ros_coevolve", "Folder of run folders when a goal gives no output_dir."
    ),
    Param("memory", "", "Bank folder every run starts from (empty: fresh memory)."),
    Param("call_timeout_s", 30.0, "Longest wait for one controller call [s].", 1.0, 600.0),
    Param(
        "bag_wait_s", 10.0, "Longest wait for the recorder to close the run's bag [s].", 0.0, 120.0
    ),
)


class CoEvolveNode(Node):
    executor_threads = 4

    def __init__(self, **kwargs: Any) -> None:
        from captain_ros.ros.humanoid_client import RosHumanoidBridge

        super().__init__("captain_coevolve", **kwargs)
        self.p = declare(self, PARAMS)
        group = ReentrantCallbackGroup()
        self.receipt_pub = self.create_publisher(Receipt, "/captain/receipts", 100)
        self.event_pub = self.create_publisher(EpisodeEvent, "/captain/episode_events", 100)
        self.bridge = RosHumanoidBridge(self, self.p["call_timeout_s"], group)
        self.recorder = RecorderWatch(self, self.p["bag_wait_s"], group)
        self._busy = threading.Lock()
        self.server = ActionServer(
            self,
            RunEpisode,
            "/captain/run_episode",
            self._execute,
            goal_callback=lambda _g: (
                GoalResponse.REJECT if self._busy.locked() else GoalResponse.ACCEPT
            ),
            cancel_callback=lambda _g: CancelResponse.ACCEPT,
            callback_group=group,
            feedback_pub_qos_profile=FEEDBACK_QOS,
        )

    def _event(self, episode_id: str, event: str, detail: dict[str, Any]) -> None:
        self.event_pub.publish(
            EpisodeEvent(
                stamp=self.get_clock().now().to_msg(),
                episode_id=episode_id,
                event=event,
                detail_json=json.dumps(detail, default=str),
            )
        )

    def _execute(self, goal_handle: Any) -> RunEpisode.Result:
        with self._busy:
            return self._run(goal_handle)

    def _run(self, goal_handle: Any) -> RunEpisode.Result:
        from captain_ros.research.coevolve.loop import CoEvolveRun
        from captain_ros.research.coevolve.receipts import event_result
        from captain_ros.research.coevolve.records import RunConfig
        from captain_ros.research.coevolve.report import write_report
        from captain_ros.research.coevolve.roles import make_roles

        g = goal_handle.request
        res = RunEpisode.Result()
        layout = g.task or "base"
        run_id = f"coevolve_{layout}_{g.seed}_{time.strftime('%Y%m%dT%H%M%S')}"
        res.episode_id = run_id
        try:
            cfg = RunConfig(
                layout=layout,
                seed=int(g.seed),
                budget=int(g.max_physical_actions or 80),
                memory_in=self.p["memory"],
            )
            roles = make_roles(g.policy or self.p["roles"], True)
            self.bridge.load_scene(layout, int(g.seed))
        except Exception as exc:  # noqa: BLE001 - a bad goal or a missing controller aborts with a reason
            res.outcome_label, res.summary_json = "invalid_goal", json.dumps({"error": str(exc)})
            goal_handle.abort()
            return res
        out_dir = Path(g.output_dir or Path(self.p["output_root"]) / run_id)
        count = {"n": 0}

        def on_event(ev: dict[str, Any]) -> None:
            item = event_result(ev)
            if item is None:
                return
            count["n"] += 1
            msg = convert.result_to_receipt(
                item[1],
                item[0],
                episode_id=run_id,
                request_index=int(ev.get("transaction", 0) or 0),
                call_index=count["n"],
                stamp_s=time.time(),
            )
            self.receipt_pub.publish(msg)
            goal_handle.publish_feedback(
                RunEpisode.Feedback(
                    receipts=[msg],
                    requests_done=int(ev.get("transaction", 0) or 0),
                    calls_done=count["n"],
                    progress=min(1.0, float(ev.get("transaction", 0) or 0) / cfg.budget),
                    phase="running",
                )
            )

        self._event(run_id, "start", {"layout": layout, "seed": g.seed, "out_dir": str(out_dir)})
        bag_open = self.recorder.bag_opened(run_id)
        try:
            summary = CoEvolveRun(
                cfg,
                roles,
                out_dir,
                bridge=self.bridge,
                listeners=[on_event],
                should_stop=lambda: goal_handle.is_cancel_requested,
            ).run()
        except Exception as exc:  # noqa: BLE001 - the node survives a failed run
            self.get_logger().error(f"run {run_id} failed: {exc!r}")
            res.outcome_label, res.summary_json = "internal_error", json.dumps({"error": repr(exc)})
            goal_handle.abort()
            return res
        finally:
            self._event(run_id, "end", {"calls": count["n"]})
            roles.close()
        write_report(out_dir)
        res.outcome_label = "canceled" if goal_handle.is_cancel_requested else summary.label
        res.host_success = res.strict_success = summary.outcome.success
        res.requests, res.calls = summary.outcome.charged, count["n"]
        res.physical_actions, res.wall_time_s = summary.outcome.charged, summary.wall_s
        res.failures = summary.outcome.charged - summary.outcome.accepted
        bag = self.recorder.bag_closed(run_id, bag_open)
        res.bag_path, res.bag_complete, res.bag_status = bag.path, bag.complete, bag.status
        res.summary_json = json.dumps(summary.to_dict(), default=str)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return res


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [CoEvolveNode()])


if __name__ == "__main__":
    raise SystemExit(main())
