"""Record an in-process episode as a rosbag2 MCAP bag (no rclpy: ``rosbags`` writes the CDR).

Topics (the same names and types as the recorder node of the ROS graph):
``/captain/receipts`` (``captain_ros_interfaces/msg/Receipt``, one per robot call) and
``/captain/episode`` (``std_msgs/msg/String``, the JSON summary at the end).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captain_ros.evaluation.summary import EpisodeSummary

RECEIPT_TYPE = "captain_ros_interfaces/msg/Receipt"


def write_episode_bag(path: str | Path, receipts: Sequence[dict[str, Any]],
                      summary: EpisodeSummary, start_wall_s: float | None = None) -> Path:
    """Write ``receipts`` (from :class:`~captain_ros.evaluation.episode.LiveRobot`) and the summary."""
    from captain_ros.ros.bag import BagWriter, make_typestore, qos

    bag = Path(path)
    if bag.exists():
        shutil.rmtree(bag)
    store = make_typestore()
    Receipt = store.types[RECEIPT_TYPE]
    String = store.types["std_msgs/msg/String"]
    Time = store.types["builtin_interfaces/msg/Time"]
    t0 = start_wall_s if start_wall_s is not None else time.time() - summary.wall_s
    writer = BagWriter(bag, store)
    try:
        writer.add_topic("/captain/receipts", RECEIPT_TYPE, [qos(100)])
        writer.add_topic("/captain/episode", "std_msgs/msg/String", [qos(1, transient_local=True)])
        for i, r in enumerate(receipts):
            stamp = t0 + float(r.get("t_s", 0.0)) + float(r.get("duration_s", 0.0))
            sec = int(stamp)
            msg = Receipt(stamp=Time(sec=sec, nanosec=int((stamp - sec) * 1e9)),
                          episode_id=f"{summary.task}/{summary.seed}",
                          request_index=int(r.get("request_index", 0)), call_index=i,
                          capability=str(r["capability"]), success=bool(r["success"]),
                          executed=bool(r["executed"]),
                          failure_category=str(r.get("failure_category") or ""),
                          message=str(r.get("message", "")), receipt=str(r.get("receipt", "")),
                          value_json="null", diagnostics_json="{}", budget_json="{}",
                          duration_s=float(r.get("duration_s", 0.0)))
            writer.write_msg("/captain/receipts", int(stamp * 1e9), msg, RECEIPT_TYPE)
        end = t0 + summary.wall_s
        writer.write_msg("/captain/episode", int(end * 1e9),
                         String(data=json.dumps(summary.to_dict(), default=str)),
                         "std_msgs/msg/String")
    finally:
        writer.close()
    return bag
