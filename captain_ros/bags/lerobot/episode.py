"""One recorded episode read from a rosbag2 bag: the state streams and the code-as-policy record.

A bag holds one episode (the recorder's, the in-process ``bag/`` of ``captain run``) or several
(split at its ``episode_start`` trajectory lines). Times are the bag's message times [ns] (the
stamps the nodes gave their messages). Images are not decoded here: only their times are kept,
and :func:`iter_images` streams them when the video is encoded, so memory does not grow with the
episode. :mod:`.sources` says which bags and folders a command line names.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.bags.messages import COMMAND_TOPIC, TRAJECTORY_TOPIC
from captain_ros.core.errors import CaptainError

JOINT_TOPIC = "/joint_states"
TF_TOPIC = "/tf"
RECEIPT_TOPIC = "/captain/receipts"
WRENCH_PREFIX = "/captain/wrench/"
JAW_SUFFIX = "_jaw_opening_m"
IMAGE_TOPIC = re.compile(r"^/camera/([^/]+)/image_raw$")


class ExportError(CaptainError):
    """A source cannot be exported (truncated bag, missing topic, mixed robots, ...): the message
    names the file and what is wrong."""


@dataclass(frozen=True)
class Samples:
    """A sampled stream: times [ns] (sorted) and one row of values per sample."""

    t_ns: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class Receipt:
    """One robot call's receipt as recorded on ``/captain/receipts``."""

    t_ns: int
    request_index: int
    call_index: int
    capability: str
    success: bool
    receipt: str


@dataclass(frozen=True)
class Episode:
    """The exportable content of one episode.

    Attributes:
        source: What it was read from (``BAG`` or ``BAG#k`` for the k-th episode of a bag).
        bag: The bag holding its streams.
        window_ns: ``(start, end)`` of its messages in the bag [ns].
        joint_names / arms: The joints of ``/joint_states`` (jaw openings excluded) and the arms.
        position / velocity / effort: Joint samples [rad, rad/s, N m].
        gripper: Jaw openings [m] per arm (``<arm>_jaw_opening_m`` of ``/joint_states``).
        ee_pose: Per arm: ``world -> <arm>_tcp`` from ``/tf`` as ``x y z qw qx qy qz`` [m].
        wrench: Per arm: the contact force magnitude along tool z [N].
        image_times: Per camera: the ``/camera/<c>/image_raw`` message times [ns].
        start / requests / summary: The trajectory's ``episode_start`` and ``request`` records and
            the episode record (outcome, success).
        request_end_ns: When each request's record was written (its end) [ns].
        receipts: Every robot call's receipt in time order.
        command: What the robot node commanded (``/captain/joint_commands``): joint targets [rad]
            then jaw targets [m], in the order of ``joint_names`` and ``arms``; ``None`` for a bag
            without that topic (the in-process bag, bags recorded before it existed).
    """

    source: str
    bag: Path
    window_ns: tuple[int, int]
    joint_names: tuple[str, ...]
    arms: tuple[str, ...]
    position: Samples
    velocity: Samples
    effort: Samples
    gripper: Samples
    ee_pose: dict[str, Samples]
    wrench: dict[str, Samples]
    image_times: dict[str, np.ndarray]
    start: dict[str, Any]
    requests: list[dict[str, Any]]
    summary: dict[str, Any]
    request_end_ns: list[int]
    receipts: list[Receipt] = field(default_factory=list)
    command: Samples | None = None

    @property
    def task_text(self) -> str:
        """The natural-language instruction (TASK.md's ``## Instruction``), else the task name."""
        md = str(self.start.get("task_md") or "")
        m = re.search(r"^## Instruction\s*\n+(.+?)(?:\n\s*\n|\n## |\Z)", md, re.S | re.M)
        return (
            " ".join(m.group(1).split())
            if m
            else str(self.summary.get("task") or self.start.get("task", ""))
        )

    @property
    def backend(self) -> str:
        return str(self.summary.get("backend") or self.start.get("backend") or "unknown")


def _stack(rows: list[tuple[int, list[float]]], width: int) -> Samples:
    if not rows:
        return Samples(np.zeros(0, np.int64), np.zeros((0, width)))
    order = sorted(range(len(rows)), key=lambda i: rows[i][0])
    return Samples(
        np.array([rows[i][0] for i in order], np.int64),
        np.array([rows[i][1] for i in order], np.float64).reshape(len(rows), width),
    )


_STORE: list[Any] = []


def typestore() -> Any:
    """The project's typestore, built once per process (parsing the .msg files takes a while)."""
    from captain_ros.bags.rosbag2 import make_typestore

    if not _STORE:
        _STORE.append(make_typestore())
    return _STORE[0]


def open_bag(bag: Path) -> Any:
    """An open ``rosbags`` reader of a closed bag (:class:`ExportError` for a truncated or
    unreadable one)."""
    from rosbags.rosbag2 import Reader

    if not (bag / "metadata.yaml").is_file():
        raise ExportError(
            f"{bag}: truncated bag (no metadata.yaml): run `captain bag recover {bag}` first"
        )
    try:
        reader = Reader(bag)
        reader.open()
    except Exception as exc:  # noqa: BLE001 - a corrupt file: say which
        raise ExportError(f"{bag}: unreadable bag ({type(exc).__name__}: {exc})") from exc
    return reader


def read_bag(bag: Path, summary: dict[str, Any] | None = None) -> list[Episode]:
    """The episodes of one bag (``summary``: an episode folder's ``summary.json``, which wins
    over the bag's ``episode_end`` line)."""
    store = typestore()
    reader = open_bag(bag)
    joints: list[tuple[int, Any]] = []
    commands: list[tuple[int, Any]] = []
    tfs: list[tuple[int, str, list[float]]] = []
    wrench: dict[str, list[tuple[int, list[float]]]] = {}
    receipts: list[Receipt] = []
    traj: list[tuple[int, dict[str, Any]]] = []
    images: dict[str, list[int]] = {}
    try:
        topics = {c.topic: c.msgtype for c in reader.connections}
        for need in (JOINT_TOPIC, TRAJECTORY_TOPIC):
            if need not in topics:
                raise ExportError(f"{bag}: no {need} topic (topics: {', '.join(sorted(topics))})")
        for conn, t, raw in reader.messages():
            topic = conn.topic
            if (m := IMAGE_TOPIC.match(topic)) is not None:
                images.setdefault(m.group(1), []).append(t)  # times only: no payload decoded
                continue
            if topic not in (
                JOINT_TOPIC,
                COMMAND_TOPIC,
                TF_TOPIC,
                RECEIPT_TOPIC,
                TRAJECTORY_TOPIC,
            ) and not topic.startswith(WRENCH_PREFIX):
                continue
            msg = store.deserialize_cdr(raw, conn.msgtype)
            if topic == JOINT_TOPIC:
                joints.append((t, msg))
            elif topic == COMMAND_TOPIC:
                commands.append((t, msg))
            elif topic == TF_TOPIC:
                for tr in msg.transforms:
                    p, q = tr.transform.translation, tr.transform.rotation
                    tfs.append((t, str(tr.child_frame_id), [p.x, p.y, p.z, q.w, q.x, q.y, q.z]))
            elif topic.startswith(WRENCH_PREFIX):
                wrench.setdefault(topic[len(WRENCH_PREFIX) :], []).append((t, [msg.wrench.force.z]))
            elif topic == RECEIPT_TOPIC:
                receipts.append(
                    Receipt(
                        t,
                        int(msg.request_index),
                        int(msg.call_index),
                        str(msg.capability),
                        bool(msg.success),
                        str(msg.receipt),
                    )
                )
            else:
                traj.append((t, json.loads(msg.data)))
    except ExportError:
        raise
    except ValueError as exc:
        raise ExportError(f"{bag}: a {TRAJECTORY_TOPIC} message is not JSON ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - truncated chunk, bad CDR
        raise ExportError(f"{bag}: cannot read its messages ({type(exc).__name__}: {exc})") from exc
    finally:
        reader.close()
    image_times = {c: np.array(sorted(ts), np.int64) for c, ts in images.items()}
    starts = [t for t, r in traj if r.get("type") == "episode_start"]
    if not starts:
        raise ExportError(f"{bag}: {TRAJECTORY_TOPIC} holds no episode_start")
    bounds = [-(1 << 62)] + starts[1:] + [1 << 62]  # one window per episode_start
    out = []
    for k in range(len(starts)):
        lo, hi = bounds[k], bounds[k + 1]
        source = str(bag) if len(starts) == 1 else f"{bag}#{k}"
        inside = [r for t, r in traj if lo <= t < hi]
        ends = [r for r in inside if r.get("type") == "episode_end"]
        summ = (
            summary
            if summary is not None and len(starts) == 1
            else (dict(ends[-1].get("summary") or {}) if ends else None)
        )
        if summ is None:
            raise ExportError(f"{source}: the episode has no end (it did not finish)")
        out.append(
            _episode(
                source,
                bag,
                (lo, hi),
                [(t, m) for t, m in joints if lo <= t < hi],
                [x for x in tfs if lo <= x[0] < hi],
                {a: [x for x in w if lo <= x[0] < hi] for a, w in wrench.items()},
                [r for r in receipts if lo <= r.t_ns < hi],
                [(t, r) for t, r in traj if lo <= t < hi],
                summ,
                {c: ts[(ts >= lo) & (ts < hi)] for c, ts in image_times.items()},
                [(t, m) for t, m in commands if lo <= t < hi] if commands else None,
            )
        )
    return out


def _episode(
    source: str,
    bag: Path,
    window: tuple[int, int],
    joints: list[tuple[int, Any]],
    tfs: list[tuple[int, str, list[float]]],
    wrench: dict[str, list[tuple[int, list[float]]]],
    receipts: list[Receipt],
    traj: list[tuple[int, dict[str, Any]]],
    summary: dict[str, Any],
    image_times: dict[str, np.ndarray],
    commands: list[tuple[int, Any]] | None = None,
) -> Episode:
    if not joints:
        raise ExportError(f"{source}: no {JOINT_TOPIC} message in the episode")
    names = tuple(str(n) for n in joints[0][1].name)
    jaws = tuple(n for n in names if n.endswith(JAW_SUFFIX))
    arm_joints = tuple(n for n in names if not n.endswith(JAW_SUFFIX))
    arms = tuple(n[: -len(JAW_SUFFIX)] for n in jaws)
    idx = [names.index(n) for n in arm_joints]
    jdx = [names.index(n) for n in jaws]
    pos, vel, eff, grip = [], [], [], []
    for t, m in joints:
        if tuple(m.name) != names:
            raise ExportError(f"{source}: {JOINT_TOPIC} changes its joint names mid-episode")
        p, v, e = (np.asarray(x, np.float64) for x in (m.position, m.velocity, m.effort))
        pos.append((t, list(p[idx])))
        vel.append((t, list(v[idx]) if len(v) == len(names) else [np.nan] * len(idx)))
        eff.append((t, list(e[idx]) if len(e) == len(names) else [np.nan] * len(idx)))
        grip.append((t, list(p[jdx])))
    ee = {a: _stack([(t, v) for t, child, v in tfs if child == f"{a}_tcp"], 7) for a in arms}
    for a in arms:
        if not len(ee[a].t_ns):
            raise ExportError(
                f"{source}: no {TF_TOPIC} transform world -> {a}_tcp (end-effector pose)"
            )
        if a not in wrench:
            raise ExportError(f"{source}: no {WRENCH_PREFIX}{a} topic (the arm's contact force)")
    start = next(r for _t, r in traj if r.get("type") == "episode_start")
    requests = [(t, r) for t, r in traj if r.get("type") == "request"]
    return Episode(
        source,
        bag,
        window,
        arm_joints,
        arms,
        _stack(pos, len(idx)),
        _stack(vel, len(idx)),
        _stack(eff, len(idx)),
        _stack(grip, len(jdx)),
        ee,
        {a: _stack(wrench[a], 1) for a in arms},
        image_times,
        start,
        [r for _t, r in requests],
        summary,
        [t for t, _r in requests],
        receipts,
        None if commands is None else _commands(source, commands, arm_joints + jaws),
    )


def _commands(source: str, msgs: list[tuple[int, Any]], names: tuple[str, ...]) -> Samples:
    """``/captain/joint_commands`` in the order ``names`` (the joints, then the jaws)."""
    rows = []
    for t, m in msgs:
        got = [str(n) for n in m.name]
        if sorted(got) != sorted(names):
            raise ExportError(
                f"{source}: {COMMAND_TOPIC} names {got}, not the joints of {JOINT_TOPIC} {list(names)}"
            )
        p = np.asarray(m.position, np.float64)
        rows.append((t, list(p[[got.index(n) for n in names]])))
    return _stack(rows, len(names))


def iter_images(
    bag: Path, cameras: tuple[str, ...], window_ns: tuple[int, int]
) -> Iterator[tuple[int, str, Callable[[], Any]]]:
    """``(time [ns], camera, decode)`` of the cameras' images inside a window, in time order;
    ``decode()`` deserializes the ``sensor_msgs/Image`` (only the images a frame holds are).
    Read with the ``mcap`` reader straight from the bag's file (its index, no metadata parsing)."""
    from mcap.reader import make_reader

    store = typestore()
    topics = {f"/camera/{c}/image_raw": c for c in cameras}
    for path in sorted(bag.glob("*.mcap")):
        with path.open("rb") as f:
            for schema, channel, msg in make_reader(f).iter_messages(
                topics=list(topics), starting_at=max(0, window_ns[0]), ending_before=window_ns[1]
            ):
                name = schema.name if schema is not None else "sensor_msgs/msg/Image"
                yield (
                    msg.log_time,
                    topics[channel.topic],
                    functools.partial(store.deserialize_cdr, msg.data, name),
                )
