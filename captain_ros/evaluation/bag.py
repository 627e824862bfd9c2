"""Record an in-process episode as a rosbag2 MCAP bag (no rclpy: ``rosbags`` writes the CDR).

:class:`BagObserver` writes, live, the topics the ROS graph's recorder writes for the same
episode, with the same names, types and QoS: ``/captain/episode_events`` (start, end),
``/captain/receipts`` (one per robot call), ``/captain/observations`` and, per observation, the
camera images (``/camera/<c>/image_raw`` rgb8, ``/camera/<c>/depth/image_raw`` 32FC1 [m],
``/camera/<c>/camera_info``) with their optical frames on ``/tf``, state samples
(``/joint_states``, ``/tf`` tool frames, ``/captain/wrench/<arm>``; ``/tf_static`` once) at every
request boundary and after every robot call, and in simulation ``/captain/privileged``
(``std_msgs/String``: each line of ``privileged.jsonl``). One reader serves both kinds of bag.
Stamps are wall-clock times, like the nodes' clocks. The bag is flushed after every request and
closed when the episode ends; a crash loses at most the current request.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from captain_ros.bags import BagWriter, make_typestore, qos
from captain_ros.bags.messages import TRAJECTORY_TOPIC, Messages, optical_frame
from captain_ros.core.geometry import Pose
from captain_ros.harness.episode.observers import CallEvent, EpisodeObserver, EpisodeStart
from captain_ros.harness.record.episode_record import EpisodeRecord

log = logging.getLogger(__name__)

RECEIPT_TYPE = "captain_ros_interfaces/msg/Receipt"
LATCHED = [qos(1, transient_local=True)]
TOPICS = {  # topic -> (type, QoS depth) as the nodes publish them
    "/captain/episode_events": ("captain_ros_interfaces/msg/EpisodeEvent", 100),
    "/captain/receipts": (RECEIPT_TYPE, 100),
    "/captain/observations": ("captain_ros_interfaces/msg/ObservationHandle", 10),
    "/captain/privileged": ("std_msgs/msg/String", 100),
    "/joint_states": ("sensor_msgs/msg/JointState", 10),
    "/tf": ("tf2_msgs/msg/TFMessage", 100),
}


class BagObserver(EpisodeObserver):
    """Writes the episode's bag into ``path`` from the in-process ``service`` (a RobotService:
    its backend for state samples, its perception store for observation frames)."""

    def __init__(self, path: Path, service: Any, images: bool = True) -> None:
        self.path = Path(path)
        self.service = service
        self.backend = service.backend
        self.images = images
        self.episode_id = ""
        self.writer: BagWriter | None = None
        self.msgs: Messages | None = None
        self.error = ""

    # --- helpers --------------------------------------------------------------------------------
    def _write(
        self,
        topic: str,
        msgtype: str,
        msg: Any,
        stamp_s: float,
        depth: int = 10,
        latched: bool = False,
    ) -> None:
        assert self.writer is not None
        if not self.writer.has_topic(topic):
            self.writer.add_topic(topic, msgtype, LATCHED if latched else [qos(depth)])
        self.writer.write_msg(topic, int(stamp_s * 1e9), msg, msgtype)

    def _known(self, topic: str, msg: Any, stamp_s: float) -> None:
        msgtype, depth = TOPICS[topic]
        self._write(topic, msgtype, msg, stamp_s, depth)

    def _guard(self, what: str, fn: Any, *args: Any) -> None:
        if self.writer is None or self.error:
            return
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - a bag problem never fails the episode
            self.error = f"{what}: {type(exc).__name__}: {exc}"
            log.warning("in-process bag stopped (%s)", self.error)

    def _state(self) -> None:
        assert self.msgs is not None
        m, b, now = self.msgs, self.backend, time.time()
        arms = b.spec.arm_names
        jaws = {f"{a}_jaw_opening_m": b.gripper(a).opening_m for a in arms}
        self._known(
            "/joint_states", m.joint_states([b.joint_state(a) for a in arms], now, jaws), now
        )
        self._known(
            "/tf", m.tf([m.transform("world", f"{a}_tcp", b.ee_pose(a), now) for a in arms]), now
        )
        for a in arms:
            self._write(
                f"/captain/wrench/{a}",
                "geometry_msgs/msg/WrenchStamped",
                m.wrench(a, b.contact_force_n(a), now),
                now,
            )

    def _observation(self, value: dict[str, Any]) -> None:
        assert self.msgs is not None
        m, now = self.msgs, time.time()
        handle = str(value.get("handle", ""))
        cams = [str(c) for c in value.get("cameras", [])]
        self._known(
            "/captain/observations",
            m.observation(handle, cams, float(value.get("stamp_s") or 0.0), now),
            now,
        )
        if not self.images:
            return
        obs = self.service.perception.observations.get(handle)
        tfs = []
        for cam, fr in obs.frames.items():
            frame_id = optical_frame(cam)
            self._write(
                f"/camera/{cam}/image_raw",
                "sensor_msgs/msg/Image",
                m.image(fr.rgb, now, frame_id),
                now,
            )
            self._write(
                f"/camera/{cam}/depth/image_raw",
                "sensor_msgs/msg/Image",
                m.image(fr.depth_m, now, frame_id),
                now,
            )
            self._write(
                f"/camera/{cam}/camera_info",
                "sensor_msgs/msg/CameraInfo",
                m.camera_info(fr, now),
                now,
            )
            tfs.append(m.transform("world", frame_id, Pose.from_matrix(fr.world_from_camera), now))
        self._known("/tf", m.tf(tfs), now)

    # --- hooks ----------------------------------------------------------------------------------
    def on_start(self, info: EpisodeStart) -> None:
        if self.path.exists():
            shutil.rmtree(self.path)
        store = make_typestore()
        self.writer, self.msgs = BagWriter(self.path, store), Messages(store)
        self.episode_id = f"{info.task}_{info.seed}"
        now = time.time()
        m = self.msgs
        self._guard(
            "start",
            self._known,
            "/captain/episode_events",
            m.episode_event(
                self.episode_id,
                "start",
                {"task": info.task, "seed": info.seed, "out_dir": info.out_dir},
                now,
            ),
            now,
        )
        spec = self.backend.spec
        self._guard(
            "tf_static",
            self._write,
            "/tf_static",
            "tf2_msgs/msg/TFMessage",
            m.tf(
                [m.transform("world", f"{a.name}_base_link", a.base_pose, now) for a in spec.arms]
            ),
            now,
            1,
            True,
        )

    def before_request(self, t: int) -> None:
        self._guard("state", self._state)

    def on_call(self, event: CallEvent) -> None:
        assert self.msgs is not None
        now = time.time()
        msg = self.msgs.receipt(
            event.result,
            event.name,
            episode_id=self.episode_id,
            request_index=event.request,
            call_index=event.index,
            stamp_s=now,
            duration_s=event.duration_s,
        )
        self._guard("receipt", self._known, "/captain/receipts", msg, now)
        value = event.result.value if isinstance(event.result.value, dict) else {}
        if event.name == "observe" and event.result.success and "handle" in value:
            self._guard("observation", self._observation, value)
        self._guard("state", self._state)

    def on_privileged(self, line: dict[str, Any]) -> None:
        assert self.msgs is not None
        now = time.time()
        self._guard(
            "privileged",
            self._known,
            "/captain/privileged",
            self.msgs.string(json.dumps(line)),
            now,
        )

    def on_trajectory(self, line: dict[str, Any]) -> None:
        assert self.msgs is not None
        now = time.time()
        self._guard(
            "trajectory",
            self._write,
            TRAJECTORY_TOPIC,
            "std_msgs/msg/String",
            self.msgs.string(json.dumps(line, default=str)),
            now,
            100,
        )

    def on_request(self, t: int, entry: dict[str, Any]) -> None:
        self._guard("flush", self.writer.flush if self.writer else (lambda: None))

    def amend(self, record: EpisodeRecord) -> EpisodeRecord:
        """Write the end event with the summary and close the bag; the record names it."""
        if self.writer is None:
            return record
        assert self.msgs is not None
        now = time.time()
        self._guard(
            "end",
            self._known,
            "/captain/episode_events",
            self.msgs.episode_event(self.episode_id, "end", record.to_dict(), now),
            now,
        )
        try:
            self.writer.close()
        except Exception as exc:  # noqa: BLE001
            self.error = self.error or f"close: {type(exc).__name__}: {exc}"
        self.writer = None
        extra = dict(record.extra)
        if self.error:
            extra["bag_error"] = self.error
        return replace(record, bag_path=str(self.path), bag_complete=not self.error, extra=extra)
