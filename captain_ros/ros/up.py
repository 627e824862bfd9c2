"""``captain up``: the whole ROS graph in one process, one episode through the RunEpisode action.

Composes the same nodes as ``launch/captain.launch.py`` (robot + perception, policy, recorder)
from the same ``config/captain.yaml`` on one multi-threaded executor, for machines without the
ROS launch tools. It then acts as an operator: sends a ``RunEpisode`` goal, prints every receipt
from the action feedback as it arrives, and prints the result summary (outcome, host/strict
success, counts, bag path). Exit status 0 when the episode ran to an end, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from pathlib import Path
from typing import Any

from captain_ros.core.errors import CaptainError
from captain_ros.core.share import share_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default="pick_place", help="task name (default: pick_place)")
    parser.add_argument("--seed", type=int, default=1000, help="scene seed (default: 1000)")
    parser.add_argument(
        "--policy",
        default="",
        help="scripted | openai | transformers | replay:FILE "
        "(default: the policy node's parameter)",
    )
    parser.add_argument(
        "--backend", default="", help="mujoco | fake (default: from the params file)"
    )
    parser.add_argument(
        "--params-file", default=str(share_path("config", "captain.yaml")), help="ROS 2 params file"
    )
    parser.add_argument("--out", default="runs/up", help="episode folder; the bag goes to OUT/bags")
    parser.add_argument("--max-requests", type=int, default=0, help="request budget (0 = default)")
    parser.add_argument(
        "--max-wall-s", type=float, default=0.0, help="wall-time budget [s] (0 = default)"
    )
    parser.add_argument("--no-record", action="store_true", help="do not start the recorder node")
    parser.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID for this graph")
    parser.add_argument("--quiet", action="store_true", help="do not print receipts as they arrive")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a non-empty --out folder instead of refusing",
    )


def compose(
    params_file: str,
    backend: str = "",
    record_dir: str | None = None,
    context: Any = None,
    backend_obj: Any = None,
    robot_params: dict[str, Any] | None = None,
    overwrite: bool = False,
    allowed_root: str = "",
) -> list[Any]:
    """The graph's nodes (robot node configured and active) with parameters from ``params_file``.

    ``robot_params`` override robot-node parameters (e.g. ``{"camera_rate_hz": 0.0}``);
    ``allowed_root`` is the policy node's (the operator's ``--out``: goals are confined to it).
    """
    from rclpy.parameter import Parameter

    from captain_ros.ros.policy_node import PolicyNode
    from captain_ros.ros.recorder_node import RecorderNode
    from captain_ros.ros.robot_stack import make_robot_stack

    cli = ["--ros-args", "--params-file", params_file] if params_file else []
    kw = {"context": context, "cli_args": cli}
    robot_over = [Parameter("backend", value=backend)] if backend else []
    robot_over += [Parameter(k, value=v) for k, v in (robot_params or {}).items()]
    nodes = make_robot_stack(backend_obj, robot_overrides=robot_over, **kw)
    confined = [Parameter("allowed_root", value=allowed_root)] if allowed_root else []
    nodes.append(
        PolicyNode(
            parameter_overrides=[
                *confined,
                Parameter("overwrite_output", value=overwrite),
                Parameter("expect_recorder", value=record_dir is not None),
            ],
            **kw,
        )
    )
    if record_dir is not None:
        nodes.append(
            RecorderNode(parameter_overrides=[Parameter("output_dir", value=record_dir)], **kw)
        )
    return nodes


REFUSED = ("invalid_goal", "scene_not_loaded", "estop", "internal_error", "robot_not_ready")
"""Outcome labels of a goal the graph refused or could not run (one line, exit status 2)."""


def run(args: argparse.Namespace) -> int:
    from captain_ros.evaluation.config import EpisodeConfig, PolicyConfig
    from captain_ros.evaluation.episode import check_episode_args

    try:  # a bad argument costs one line, not a graph start-up
        config = EpisodeConfig(args.task, args.seed, policy=PolicyConfig(args.policy or "scripted"))
        check_episode_args(config)
    except (CaptainError, ValueError, OSError) as exc:
        print(f"captain up: {exc}", file=sys.stderr)
        return 2
    return _run_graph(args)


def _run_graph(args: argparse.Namespace) -> int:
    import rclpy
    from captain_ros_interfaces.action import RunEpisode
    from rclpy.lifecycle import LifecycleNode
    from rclpy.node import Node

    from captain_ros.ros.action_client import ActionClient
    from captain_ros.ros.env import apply_ros_environment, default_state_dir
    from captain_ros.ros.params import ParameterError
    from captain_ros.ros.qos import FEEDBACK_QOS
    from captain_ros.ros.runner import Executors

    apply_ros_environment(default_state_dir(), args.domain_id)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=args.domain_id)
    out = Path(args.out).absolute()
    nodes: list[Any] = []
    executors = None
    try:
        try:
            nodes = compose(
                args.params_file,
                args.backend,
                None if args.no_record else str(out / "bags"),
                context,
                overwrite=args.overwrite,
                allowed_root=str(out),
            )
        except ParameterError as exc:
            print(f"captain up: {exc}", file=sys.stderr)
            return 2
        operator = Node("captain_up", context=context)
        client = ActionClient(
            operator, RunEpisode, "/captain/run_episode", feedback_sub_qos_profile=FEEDBACK_QOS
        )
        executors = Executors([*nodes, operator]).start()
        if not client.wait_for_server(timeout_sec=30.0):
            print("captain up: the policy node's action server did not come up", file=sys.stderr)
            return 1
        goal = RunEpisode.Goal(
            task=args.task,
            seed=args.seed,
            policy=args.policy,
            max_requests=args.max_requests,
            max_wall_time_s=args.max_wall_s,
            output_dir=str(out),
        )

        def on_feedback(fb: Any) -> None:
            if not args.quiet:
                for r in fb.feedback.receipts:
                    print(f"[{r.request_index:02d}.{r.call_index:03d}] {r.receipt}", flush=True)

        done = threading.Event()
        sent = client.send_goal_async(goal, feedback_callback=on_feedback)
        sent.add_done_callback(lambda _f: done.set())
        done.wait()
        handle = sent.result()
        if handle is None or not handle.accepted:
            print("captain up: the goal was rejected", file=sys.stderr)
            return 1
        finished = threading.Event()
        result_future = handle.get_result_async()
        result_future.add_done_callback(lambda _f: finished.set())
        try:
            finished.wait()
        except KeyboardInterrupt:
            handle.cancel_goal_async()
            finished.wait(60)
        response = result_future.result()
        if response is None:
            print("captain up: the episode ended without a result", file=sys.stderr)
            return 1
        res = response.result
        if res.outcome_label in REFUSED:
            reason = json.loads(res.summary_json or "{}").get("error", "")
            print(f"captain up: {res.outcome_label}: {reason}", file=sys.stderr)
            return 2
        print(json.dumps(result_summary(res), indent=2))
        return 0
    finally:
        if executors is not None:
            executors.shutdown()
        for n in nodes:
            if isinstance(n, LifecycleNode):  # closes the backend: no driver thread outlives rclpy
                with contextlib.suppress(Exception):
                    n.trigger_shutdown()
            n.destroy_node()
        context.try_shutdown()


def result_summary(res: Any) -> dict[str, Any]:
    return {
        "episode_id": res.episode_id,
        "outcome": res.outcome_label,
        "host_success": res.host_success,
        "strict_success": res.strict_success,
        "requests": res.requests,
        "robot_calls": res.calls,
        "physical_actions": res.physical_actions,
        "failures": res.failures,
        "wall_time_s": round(res.wall_time_s, 3),
        "bag": res.bag_path,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="captain up", description=__doc__.splitlines()[0].replace("`", "")
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
