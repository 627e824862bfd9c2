"""The chaos soak's operator (benchmarks/bench_chaos_soak.py): one goal with one chaos event.

:class:`ChaosOperator` extends the soak's rclpy operator (:class:`bench_soak.Operator`) with
what an operator of a launched graph watches: the policy and robot processes' liveliness
(``/captain/alive/<role>``), the recorder's latched status, the e-stop state; and what it does:
SIGKILL a launched process mid-goal, publish ``/captain/estop`` and release it with
``/captain/estop/reset`` (the plain service of an open graph, docs/ros.md).

A goal's answer is definite when the action server answers it (SUCCEEDED / ABORTED / CANCELED,
with the outcome and the error), or when the policy process serving it dies: that is the answer
``captain ros goal`` gives (liveliness, within about a second). No answer within ``timeout_s``
is a failure of the soak.

A goal's bag (``bag_dir/<episode_id>``) is judged by :func:`bag_verdict`: ``complete`` (the result
says so and it holds every message the nodes report having published in its window), or
``recovered`` (flagged incomplete by the result or by the recorder, then ``captain bag recover``
run on it and the bag read back with the project's reader). Anything else (missing, claimed
complete with messages missing, unflagged, unrecoverable) is a bag lost silently.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench_soak import Operator, published_minus_recorded

KILLS = {
    "kill_policy": "captain_policy",
    "kill_robot": "captain_robot_stack",
    "kill_recorder": "captain_recorder",
}
KINDS = (*KILLS, "estop")
STATUS = {4: "SUCCEEDED", 5: "CANCELED", 6: "ABORTED"}


class ChaosOperator(Operator):
    """The soak's operator plus liveliness, recorder status and e-stop (module docstring)."""

    def __init__(self, domain: int) -> None:
        super().__init__(domain)
        from std_msgs.msg import Bool, String
        from std_srvs.srv import Trigger

        from captain_ros.ros.estop import (
            ESTOP_RESET_SRV,
            ESTOP_STATE_TOPIC,
            ESTOP_TOPIC,
            LATCHED_QOS,
        )
        from captain_ros.ros.liveness import Liveness

        self.Bool, self.Trigger = Bool, Trigger
        self.policy = Liveness(self.node, "policy")
        self.robot = Liveness(self.node, "robot")
        self.recorder: dict[str, Any] = {}
        self.estopped: bool | None = None
        self.node.create_subscription(
            String, "/captain/recorder/status", self._on_recorder, LATCHED_QOS
        )
        self.node.create_subscription(Bool, ESTOP_STATE_TOPIC, self._on_estop, LATCHED_QOS)
        self.estop_pub = self.node.create_publisher(Bool, ESTOP_TOPIC, 10)
        self.reset_client: Any = self.node.create_client(Trigger, ESTOP_RESET_SRV)

    def _on_recorder(self, msg: Any) -> None:
        self.recorder = json.loads(msg.data)

    def _on_estop(self, msg: Any) -> None:
        self.estopped = bool(msg.data)

    def ready(self) -> bool:
        """Every process up, the recorder ready, the e-stop released, the action server found."""
        return (
            self.policy.alive
            and self.robot.alive
            and bool(self.recorder.get("ready"))
            and self.estopped is False
            and self.client.server_is_ready()
        )

    def wait_ready(self, timeout_s: float, launch: subprocess.Popen[bytes]) -> float:
        """Seconds until :meth:`ready` (``-1`` when it is not within ``timeout_s`` or the
        ``launch`` stopped)."""
        t0 = time.monotonic()
        while not self.ready():
            if time.monotonic() - t0 > timeout_s or launch.poll() is not None:
                return -1.0
            time.sleep(0.1)
        return time.monotonic() - t0

    def goal(
        self, chaos: str, after_receipts: int, pid_of: Any, timeout_s: float, **goal: Any
    ) -> dict[str, Any]:
        """Send ``goal``; once ``after_receipts`` receipts came, apply ``chaos`` (a kind of
        :data:`KINDS` or ``none``); return the goal's answer and what the chaos did."""
        episode: list[str] = []
        receipts = threading.Event()
        n = [0]

        def on_feedback(fb: Any) -> None:
            for r in fb.feedback.receipts:
                if not episode:
                    episode.append(str(r.episode_id))
                n[0] += 1
            if n[0] >= after_receipts:
                receipts.set()

        t0 = time.monotonic()
        row: dict[str, Any] = {"chaos": chaos, "hit": False, "episode_id": ""}
        answered = threading.Event()
        fut = self.client.send_goal_async(
            self.RunEpisode.Goal(**goal), feedback_callback=on_feedback
        )
        fut.add_done_callback(lambda _f: answered.set())
        handle: Any = fut.result() if answered.wait(60.0) else None
        if handle is None or not handle.accepted:  # rejected: an answer (the graph was ready)
            row.update(answer="rejected" if handle else "no_answer", definite=handle is not None)
            row["wall_s"] = time.monotonic() - t0
            return row
        policy_instance = self.policy.instance
        answered.clear()
        res = handle.get_result_async()
        res.add_done_callback(lambda _f: answered.set())
        if chaos != "none":
            while not receipts.wait(0.05) and not answered.is_set():
                pass
            if not answered.is_set():  # the episode is running: hit it
                row["hit"] = True
                if chaos == "estop":
                    self.estop_pub.publish(self.Bool(data=True))
                else:
                    os.kill(pid_of(KILLS[chaos]), signal.SIGKILL)
        while not answered.wait(0.1):
            lost = self.policy.lost_since(policy_instance)
            if lost is not None:
                row.update(answer="policy_lost", definite=True, error=lost)
                break
            if time.monotonic() - t0 > timeout_s:
                row.update(answer="no_answer", definite=False, error=f"no result in {timeout_s} s")
                break
        else:
            r = res.result()
            s = r.result
            row.update(
                answer=STATUS.get(int(r.status), str(r.status)),
                definite=int(r.status) in STATUS,
                outcome=s.outcome_label,
                error=json.loads(s.summary_json or "{}").get("error") or "",
                bag_path=s.bag_path,
                bag_complete=bool(s.bag_complete),
                bag_status=s.bag_status,
            )
            episode[:0] = [s.episode_id] if s.episode_id else []
        row["episode_id"] = episode[0] if episode else ""
        row["wall_s"] = time.monotonic() - t0
        return row

    def reset_estop(self, timeout_s: float = 30.0) -> str:
        """Release a latched e-stop as an operator of an open graph does; the service's line."""
        if not self.reset_client.wait_for_service(timeout_sec=timeout_s):
            return "no /captain/estop/reset"
        done = threading.Event()
        fut = self.reset_client.call_async(self.Trigger.Request())
        fut.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout_s):
            return "no answer from /captain/estop/reset"
        resp: Any = fut.result()
        return str(resp.message)

    def flagged_by_recorder(self, episode_id: str, timeout_s: float) -> str:
        """The recorder's word on ``episode_id``'s bag: closed incomplete (with what is
        missing), recovered at its start, or "" when it says neither within ``timeout_s``."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            st = self.recorder
            for b in st.get("closed", []):
                if b["episode_id"] == episode_id and not b["complete"]:
                    return f"closed incomplete by the recorder (missing {b['missing']})"
            if any(Path(p).name == episode_id for p in st.get("recovered", [])):
                return "recovered by the respawned recorder at its start"
            time.sleep(0.1)
        return ""


def read_back(bag: Path) -> int:
    """Messages of ``bag`` read with the project's reader (their number; it must equal the
    summary's counts)."""
    from captain_ros.bags.rosbag2 import read_messages, summarize_bag

    counts = sum(summarize_bag(bag).counts.values())
    n = sum(1 for _ in read_messages(bag))
    if n != counts:
        raise RuntimeError(f"{bag}: read {n} messages, its summary counts {counts}")
    return n


def bag_verdict(op: ChaosOperator, row: dict[str, Any], bag_dir: Path) -> dict[str, Any]:
    """``complete`` / ``recovered`` / ``lost_silently`` / ``no_episode`` for the goal ``row``."""
    if not row["episode_id"]:
        return {"bag": "no_episode"}
    bag = Path(row.get("bag_path") or bag_dir / row["episode_id"])
    if not bag.is_dir():
        return {"bag": "lost_silently", "bag_why": f"{bag} does not exist"}
    if row.get("bag_complete"):
        lost = published_minus_recorded(str(bag))
        if lost == 0:
            return {"bag": "complete", "messages": read_back(bag)}
        return {"bag": "lost_silently", "bag_why": f"claimed complete, {lost} messages missing"}
    flag = row.get("bag_status", "") if row.get("bag_status", "").startswith("incomplete") else ""
    flag = flag or op.flagged_by_recorder(row["episode_id"], 15.0)
    if not flag:
        return {"bag": "lost_silently", "bag_why": "incomplete and flagged by nobody"}
    rec = subprocess.run(
        [str(Path(sys.prefix) / "bin" / "captain"), "bag", "recover", str(bag)],
        capture_output=True,
        text=True,
    )
    if rec.returncode != 0:
        return {"bag": "lost_silently", "bag_why": f"recover failed: {rec.stderr.strip()[-200:]}"}
    try:
        n = read_back(bag)
    except Exception as exc:  # noqa: BLE001 - any reader error means the bag is not recovered
        return {"bag": "lost_silently", "bag_why": f"unreadable after recover: {exc}"}
    return {"bag": "recovered", "flag": flag, "messages": n}
