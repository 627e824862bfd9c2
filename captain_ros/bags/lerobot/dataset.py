"""Write one LeRobotDataset v3.0 from many episodes, atomically.

Layout (what LeRobot 0.4+ writes and reads): ``meta/info.json`` (``codebase_version "v3.0"``,
``fps``, typed ``features``, path templates), ``meta/stats.json``, ``meta/tasks.parquet`` (index
``task``, column ``task_index``), ``meta/episodes/chunk-000/file-000.parquet`` (one row per
episode: ``episode_index tasks length``, the ``data/`` and ``videos/<key>/`` file indices and
time spans, ``dataset_from_index dataset_to_index``, ``stats/...``), ``data/chunk-XXX/file-YYY.parquet``
(one row group per episode) and ``videos/observation.images.<camera>/chunk-XXX/file-YYY.mp4``.
Files roll over at LeRobot's caps (100 MB data, 200 MB video, 1000 files per chunk). Our own
record (``meta/captain_ros/``: each request's full record and every receipt, ``export.json``:
sources, clock and what each column means) travels beside it; LeRobot ignores it.

The dataset is built in ``.<name>.partial-<pid>`` beside ``out`` and renamed into place only
once complete: an interrupted export never leaves a folder that looks like a dataset.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.bags.lerobot import tables
from captain_ros.bags.lerobot.episode import Episode, ExportError, iter_images
from captain_ros.bags.lerobot.frames import Frames, feature_names, resample
from captain_ros.bags.lerobot.stats import (
    aggregate,
    feature_stats,
    flat_columns,
    image_sample_indices,
    image_stats,
    to_json,
)
from captain_ros.bags.lerobot.tables import (
    CHUNKS_SIZE,
    CODEBASE_VERSION,
    DATA_MB,
    DATA_PATH,
    DTYPES,
    VIDEO_MB,
    VIDEO_PATH,
)
from captain_ros.bags.lerobot.video import VideoFile, held_images


@dataclass(frozen=True)
class ExportSummary:
    """What was written: the dataset folder, its episodes, frames and cameras."""

    path: Path
    episodes: int
    frames: int
    fps: int
    cameras: tuple[str, ...]


def _next(chunk: int, file: int) -> tuple[int, int]:
    return (chunk + 1, 0) if file == CHUNKS_SIZE - 1 else (chunk, file + 1)


def _robot_check(episodes: list[Episode]) -> None:
    first = episodes[0]
    for ep in episodes[1:]:
        if (ep.joint_names, ep.arms) != (first.joint_names, first.arms):
            raise ExportError(
                f"mixed robots: {first.source} has joints {list(first.joint_names)}, "
                f"{ep.source} has {list(ep.joint_names)} (export each robot on its own)"
            )


class _Files:
    """A rolling sequence of output files (data parquet or one camera's videos)."""

    def __init__(self, cap_mb: int) -> None:
        self.chunk = self.file = 0
        self.cap = cap_mb * 1024 * 1024
        self.handle: Any = None
        self.offset = 0  # frames already in the current file

    def roll_if_full(self, size: int) -> bool:
        if self.handle is not None and size >= self.cap:
            self.handle.close()
            self.handle, self.offset = None, 0
            self.chunk, self.file = _next(self.chunk, self.file)
            return True
        return False


def export_lerobot(
    episodes: list[Episode],
    out: Path,
    fps: int = 10,
    cameras: tuple[str, ...] | None = None,
    overwrite: bool = False,
) -> ExportSummary:
    """Write ``episodes`` as one dataset at ``out`` (see the module doc).

    Args:
        fps: The frame rate [Hz] every stream is sampled (and held) at.
        cameras: Cameras to encode (``None``: those with images in the first episode; ``()``: none).
        overwrite: Replace an existing ``out`` (only after the new dataset is complete).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not episodes:
        raise ExportError("no episode to export")
    if not 1 <= fps <= 1000:
        raise ExportError(f"--fps {fps}: choose 1..1000 frames per second")
    if out.exists() and not overwrite:
        raise ExportError(f"{out} exists (pass --overwrite to replace it)")
    _robot_check(episodes)
    cams = (
        tuple(sorted(c for c, t in episodes[0].image_times.items() if len(t)))
        if cameras is None
        else cameras
    )
    names = feature_names(episodes[0], cams)
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        result = _write(episodes, tmp, fps, cams, names, pa, pq)
        (tmp / "meta" / "info.json").write_text(json.dumps(result["info"], indent=4) + "\n")
        if out.exists():
            old = out.parent / f".{out.name}.replaced-{os.getpid()}"
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportSummary(out, len(episodes), result["info"]["total_frames"], fps, cams)


def _write(
    episodes: list[Episode],
    root: Path,
    fps: int,
    cams: tuple[str, ...],
    names: dict[str, Any],
    pa: Any,
    pq: Any,
) -> dict[str, Any]:
    tasks: dict[str, int] = {}
    data = _Files(DATA_MB)
    videos = {c: _Files(VIDEO_MB) for c in cams}
    shapes: dict[str, list[int]] = {}
    rows: list[dict[str, Any]] = []
    ep_stats: list[dict[str, dict[str, np.ndarray]]] = []
    requests: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    total = 0
    for k, ep in enumerate(episodes):
        task_index = tasks.setdefault(ep.task_text, len(tasks))
        fr = resample(ep, fps, cams, k, task_index)
        n = len(fr.t_ns)
        cols = dict(fr.columns)
        cols["index"] = np.arange(total, total + n, dtype=np.int64)
        table = pa.table({key: tables.arrow(cols[key], DTYPES[key]) for key in DTYPES})
        if data.handle is None:
            path = root / DATA_PATH.format(chunk_index=data.chunk, file_index=data.file)
            path.parent.mkdir(parents=True, exist_ok=True)
            data.handle = pq.ParquetWriter(str(path), table.schema, compression="snappy")
        data.handle.write_table(table)  # one row group per episode
        row: dict[str, Any] = {
            "episode_index": k,
            "tasks": [ep.task_text],
            "length": n,
            "data/chunk_index": data.chunk,
            "data/file_index": data.file,
            "dataset_from_index": total,
            "dataset_to_index": total + n,
        }
        data.offset += table.nbytes
        stats = {key: feature_stats(cols[key]) for key in DTYPES if DTYPES[key] != "string"}
        if cams:
            row.update(_encode(ep, fr, cams, videos, shapes, stats, root, fps))
        data.roll_if_full(data.offset)
        row.update({"meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0})
        row.update(tables.captain_columns(ep, fr))
        row.update(flat_columns(stats))
        rows.append(row)
        ep_stats.append(stats)
        requests += tables.requests(ep, fr, k)
        receipts += [
            {
                "episode_index": k,
                "request_index": r.request_index,
                "call_index": r.call_index,
                "timestamp": (r.t_ns - int(fr.t_ns[0])) / 1e9,
                "capability": r.capability,
                "success": r.success,
                "receipt": r.receipt,
            }
            for r in ep.receipts
        ]
        total += n
    if data.handle is not None:
        data.handle.close()
    for v in videos.values():
        if v.handle is not None:
            v.handle.close()
    meta = root / "meta"
    (meta / "episodes" / "chunk-000").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(rows), str(meta / "episodes" / "chunk-000" / "file-000.parquet")
    )
    tables.write_tasks(tasks, meta / "tasks.parquet")
    (meta / "stats.json").write_text(json.dumps(to_json(aggregate(ep_stats)), indent=4) + "\n")
    own = meta / "captain_ros"
    own.mkdir()
    pq.write_table(pa.Table.from_pylist(requests), str(own / "requests.parquet"))
    if receipts:
        pq.write_table(pa.Table.from_pylist(receipts), str(own / "receipts.parquet"))
    features = tables.features(names, cams, shapes, root)
    (own / "export.json").write_text(
        json.dumps(tables.provenance(episodes, fps, cams), indent=2) + "\n"
    )
    backends = sorted({ep.backend for ep in episodes})
    return {
        "info": {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": "+".join(backends),
            "total_episodes": len(episodes),
            "total_frames": total,
            "total_tasks": len(tasks),
            "chunks_size": CHUNKS_SIZE,
            "data_files_size_in_mb": DATA_MB,
            "video_files_size_in_mb": VIDEO_MB,
            "fps": fps,
            "splits": {"train": f"0:{len(episodes)}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if cams else None,
            "features": features,
        }
    }


def _encode(
    ep: Episode,
    fr: Frames,
    cams: tuple[str, ...],
    videos: dict[str, _Files],
    shapes: dict[str, list[int]],
    stats: dict[str, Any],
    root: Path,
    fps: int,
) -> dict[str, Any]:
    """Append one episode to each camera's video; its ``videos/...`` columns and image stats."""
    n = len(fr.t_ns)
    keys = {c: f"observation.images.{c}" for c in cams}
    starts = {c: videos[c].offset for c in cams}
    picks = set(image_sample_indices(n).tolist())
    sampled: dict[str, list[np.ndarray]] = {c: [] for c in cams}
    for i, imgs in enumerate(
        held_images(iter_images(ep.bag, cams, ep.window_ns), fr.t_ns, cams, ep.source)
    ):
        for cam, img in imgs.items():
            v, key, shape = videos[cam], keys[cam], [img.shape[0], img.shape[1], 3]
            if v.handle is None:
                path = root / VIDEO_PATH.format(
                    video_key=key, chunk_index=v.chunk, file_index=v.file
                )
                v.handle = VideoFile(path, fps, img.shape[1], img.shape[0])
            if shapes.setdefault(key, shape) != shape:
                raise ExportError(
                    f"{ep.source}: camera {cam} is {shape[1]}x{shape[0]}, earlier episodes "
                    f"{shapes[key][1]}x{shapes[key][0]}"
                )
            v.handle.add(img)
            if i in picks:
                sampled[cam].append(img)
    row: dict[str, Any] = {}
    for cam in cams:
        v, key = videos[cam], keys[cam]
        v.offset += n
        stats[key] = image_stats(sampled[cam])
        row.update(
            {
                f"videos/{key}/chunk_index": v.chunk,
                f"videos/{key}/file_index": v.file,
                f"videos/{key}/from_timestamp": starts[cam] / fps,
                f"videos/{key}/to_timestamp": (starts[cam] + n) / fps,
            }
        )
        v.roll_if_full(v.handle.path.stat().st_size)
    return row
