"""``captain ros goal | estop-reset | keygen``: the operator's commands to a launched graph.

- ``goal``: sends a ``RunEpisode`` goal to ``/captain/run_episode`` and prints its receipts and
  result, like ``ros2 action send_goal``, with two differences: on a secured graph
  (``secure:=true``) it signs the goal with the key file (``--key-file`` or ``$CAPTAIN_KEY_FILE``),
  and it watches the policy process's liveliness (:mod:`captain_ros.ros.liveness`): when that
  process dies, the goal is lost with it and the command says so within about a second (exit 1)
  instead of waiting for a result that cannot come (``ros2 action send_goal`` waits forever).
- ``estop-reset``: releases a latched e-stop on a secured graph (a signed command; the plain
  ``/captain/estop/reset`` is refused there). On an open graph use the plain service.
- ``keygen PATH``: writes a new deployment key, mode 0600 (never overwrites).

Exit status: 0 when the goal succeeded / the reset was accepted / the key was written; 1 when the
graph refused or failed it; 2 for bad arguments or an unusable key file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from captain_ros.core.errors import CaptainError
from captain_ros.ros.credential import Signer, generate_key, key_path, load_key

SPIN_WAIT_S = 0.1
"""Longest single wait of this command's executor [s] (how soon it can stop)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="captain ros", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    goal = sub.add_parser("goal", help="send a RunEpisode goal (signed when a key is given)")
    goal.add_argument("--task", default="pick_place")
    goal.add_argument("--seed", type=int, default=1000)
    goal.add_argument("--policy", default="", help="'' = the policy node's parameter")
    goal.add_argument("--output-dir", default="", help="episode folder (under allowed_root)")
    goal.add_argument("--max-requests", type=int, default=0)
    goal.add_argument("--max-physical-actions", type=int, default=0)
    goal.add_argument("--max-wall-s", type=float, default=0.0)
    goal.add_argument("--timeout-s", type=float, default=3600.0, help="longest wait for the result")
    goal.add_argument(
        "--server-wait-s",
        type=float,
        default=60.0,
        help="longest wait for the action server to appear",
    )
    goal.add_argument("--quiet", action="store_true", help="do not print receipts")
    reset = sub.add_parser("estop-reset", help="release the e-stop of a secured graph")
    for p in (goal, reset):
        p.add_argument(
            "--key-file",
            default="",
            help="deployment key ('' = $CAPTAIN_KEY_FILE; none: an unsigned goal)",
        )
        p.add_argument(
            "--domain-id", default="", help="'' = $ROS_DOMAIN_ID, else 42 (the launch's)"
        )
    keygen = sub.add_parser("keygen", help="write a new deployment key (mode 0600)")
    keygen.add_argument("path")
    return parser


def main(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    try:
        if ns.verb == "keygen":
            print(
                f"wrote {generate_key(ns.path)} (mode 0600): launch with secure:=true "
                f"key_file:={ns.path}"
            )
            return 0
        return _with_graph(ns)
    except (CaptainError, OSError) as exc:
        print(f"captain ros {ns.verb}: {exc}", file=sys.stderr)
        return 2


def _with_graph(ns: argparse.Namespace) -> int:
    from captain_ros.ros.access import graph_environment

    path = key_path(ns.key_file)
    key = load_key(path) if path else None
    if ns.verb == "estop-reset" and key is None:
        raise CaptainError(
            "needs the deployment's key (--key-file or CAPTAIN_KEY_FILE); on an "
            "open graph call /captain/estop/reset"
        )
    env = graph_environment(os.environ, str(ns.domain_id))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", env["ROS_AUTOMATIC_DISCOVERY_RANGE"])
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=int(env["ROS_DOMAIN_ID"]))
    node = rclpy.create_node("captain_operator", context=ctx)
    executor = MultiThreadedExecutor(num_threads=2, context=ctx)
    executor.add_node(node)
    stop = threading.Event()

    def spin() -> None:  # short waits: this node has no timer that would end a blocking one
        while not stop.is_set() and ctx.ok():
            executor.spin_once(timeout_sec=SPIN_WAIT_S)

    # The verbs start the spinner once their clients exist: rclpy's ActionClient registers itself
    # with the node before it is fully built, and a spinning executor could reach it half-made.
    spinner = threading.Thread(target=spin, daemon=True)
    try:
        if ns.verb == "estop-reset":
            return _estop_reset(node, Signer(key), spinner.start)  # type: ignore[arg-type]
        return _goal(node, ns, None if key is None else Signer(key), spinner.start)
    finally:
        stop.set()
        if spinner.is_alive():
            spinner.join(5.0)  # no executor thread may outlive the context
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        ctx.try_shutdown()


def _estop_reset(node: Any, signer: Signer, start_spinning: Callable[[], None]) -> int:
    from std_srvs.srv import Trigger

    from captain_ros.ros.calls import call_sync
    from captain_ros.ros.secure import SignedClient

    client = SignedClient(node, "estop_reset", Trigger, signer)
    start_spinning()
    if not client.wait_for_service(timeout_sec=30.0):
        print(
            "captain ros estop-reset: no /captain/secure/command on this domain (is the graph "
            "launched with secure:=true?)",
            file=sys.stderr,
        )
        return 1
    resp = call_sync(client, Trigger.Request(), 30.0)
    if resp is None:
        print("captain ros estop-reset: no answer within 30 s", file=sys.stderr)
        return 1
    print(resp.message, file=sys.stdout if resp.success else sys.stderr)
    return 0 if resp.success else 1


def _goal(
    node: Any, ns: argparse.Namespace, signer: Signer | None, start_spinning: Callable[[], None]
) -> int:
    from action_msgs.msg import GoalStatus
    from captain_ros_interfaces.action import RunEpisode
    from unique_identifier_msgs.msg import UUID

    from captain_ros.ros.action_client import ActionClient
    from captain_ros.ros.liveness import Liveness
    from captain_ros.ros.qos import FEEDBACK_QOS

    policy = Liveness(node, "policy")
    client = ActionClient(
        node, RunEpisode, "/captain/run_episode", feedback_sub_qos_profile=FEEDBACK_QOS
    )
    start_spinning()
    if not client.wait_for_server(timeout_sec=ns.server_wait_s):
        print(
            f"captain ros goal: no /captain/run_episode within {ns.server_wait_s:g} s on this "
            "domain",
            file=sys.stderr,
        )
        return 1
    goal = RunEpisode.Goal(
        task=ns.task,
        seed=ns.seed,
        policy=ns.policy,
        output_dir=ns.output_dir,
        max_requests=ns.max_requests,
        max_physical_actions=ns.max_physical_actions,
        max_wall_time_s=ns.max_wall_s,
    )
    uuid = None if signer is None else UUID(uuid=list(signer.goal_uuid(goal)))
    episode: list[str] = []

    def on_feedback(fb: Any) -> None:
        for r in fb.feedback.receipts:
            if not episode:
                episode.append(str(r.episode_id))
            if not ns.quiet:
                print(f"[{r.call_index}] {r.capability}: {r.receipt or r.message}", flush=True)

    handle = _wait(
        client.send_goal_async(goal, feedback_callback=on_feedback, goal_uuid=uuid), 60.0
    )
    if handle is None or not handle.accepted:
        print(
            "captain ros goal: the goal was "
            + ("not answered" if handle is None else "rejected")
            + " (the policy node runs one goal at a time)",
            file=sys.stderr,
        )
        return 1
    deadline = time.monotonic() + 5.0
    while not policy.alive and time.monotonic() < deadline:  # its heartbeat, latched
        policy.changed.wait(0.1)
    instance = policy.instance
    started = time.monotonic()
    future = handle.get_result_async()
    while not future.done():
        lost = policy.lost_since(instance)
        if lost is not None:
            print(
                f"captain ros goal: {lost} while running the goal (episode "
                f"{episode[0] if episode else '?'}): no result will come; the robot node closed "
                "the episode's gate and the recorder its bag (incomplete). Send the goal again "
                "once the policy node is back.",
                file=sys.stderr,
            )
            return 1
        if time.monotonic() - started > ns.timeout_s:
            print(f"captain ros goal: no result within {ns.timeout_s:g} s", file=sys.stderr)
            return 1
        policy.changed.wait(0.1)
        policy.changed.clear()
    res = future.result()
    r = res.result
    summary = _summary(r.summary_json)
    status = {
        GoalStatus.STATUS_SUCCEEDED: "SUCCEEDED",
        GoalStatus.STATUS_ABORTED: "ABORTED",
        GoalStatus.STATUS_CANCELED: "CANCELED",
    }.get(res.status, str(res.status))
    print(
        json.dumps(
            {
                "status": status,
                "episode_id": r.episode_id,
                "outcome_label": r.outcome_label,
                "host_success": r.host_success,
                "strict_success": r.strict_success,
                "calls": r.calls,
                "failures": r.failures,
                # the gate's verdict in words built from the episode's measurements, apart from
                # the policy's own (unchecked) finish summary
                "gate": summary.get("gate_reason", ""),
                "policy_summary": summary.get("finish_summary", ""),
                "bag_path": r.bag_path,
                "bag_status": r.bag_status,
                **({"error": summary.get("error")} if status != "SUCCEEDED" else {}),
            }
        ),
        flush=True,
    )
    return 0 if status == "SUCCEEDED" else 1


def _summary(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _wait(future: Any, timeout_s: float) -> Any:
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    return future.result() if done.wait(timeout_s) else None
