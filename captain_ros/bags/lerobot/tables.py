"""The tables of a LeRobot v3.0 dataset beside the frames: feature schema, tasks, and our own
record (per-episode ``captain/*`` columns, every request, the provenance)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.bags.lerobot.episode import Episode
from captain_ros.bags.lerobot.frames import Frames
from captain_ros.bags.lerobot.video import video_info

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
DATA_MB = 100
VIDEO_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
DTYPES = {
    "observation.state": "float32",
    "observation.velocity": "float32",
    "observation.effort": "float32",
    "observation.gripper": "float32",
    "observation.ee_pose": "float32",
    "observation.wrench": "float32",
    "action": "float32",
    "next.reward": "float32",
    "next.done": "bool",
    "next.success": "bool",
    "captain.next_state": "float32",
    "captain.action_commanded": "bool",
    "captain.sample_age_s": "float32",
    "captain.request_index": "int64",
    "captain.code": "string",
    "captain.receipts": "string",
    "timestamp": "float32",
    "frame_index": "int64",
    "episode_index": "int64",
    "index": "int64",
    "task_index": "int64",
}


def arrow(col: np.ndarray, dtype: str) -> Any:
    import pyarrow as pa

    if dtype == "string":
        return pa.array(list(col), pa.string())
    typ = {"float32": pa.float32(), "int64": pa.int64(), "bool": pa.bool_()}[dtype]
    if col.ndim == 2 and col.shape[1] == 1:  # shape [1] is a scalar column in LeRobot's schema
        col = col[:, 0]
    if col.ndim == 2:
        return pa.FixedSizeListArray.from_arrays(pa.array(col.reshape(-1), typ), col.shape[1])
    return pa.array(col, typ)


def write_tasks(tasks: dict[str, int], path: Path) -> None:
    import pandas as pd

    df = pd.DataFrame(
        {"task_index": list(tasks.values())}, index=pd.Index(list(tasks), name="task")
    )
    df.to_parquet(path)


def features(
    names: dict[str, Any], cams: tuple[str, ...], shapes: dict[str, list[int]], root: Path
) -> dict[str, Any]:
    feats: dict[str, Any] = {}
    for key, dtype in DTYPES.items():
        if key == "timestamp":  # the cameras come before the defaults, as in LeRobot's own files
            for cam in cams:
                vkey = f"observation.images.{cam}"
                info = video_info(
                    root / VIDEO_PATH.format(video_key=vkey, chunk_index=0, file_index=0)
                )
                feats[vkey] = {
                    "dtype": "video",
                    "shape": shapes[vkey],
                    "names": ["height", "width", "channels"],
                    "info": info,
                }
        shape = [len(names[key])] if key in names else [1]
        feats[key] = {"dtype": dtype, "shape": shape, "names": names.get(key)}
    return feats


def captain_columns(ep: Episode, fr: Frames) -> dict[str, Any]:
    s = ep.summary
    return {
        "captain/source": ep.source,
        "captain/task": str(s.get("task", "")),
        "captain/seed": int(s.get("seed", 0)),
        "captain/backend": ep.backend,
        "captain/policy": str(s.get("policy", "")),
        "captain/outcome": str(s.get("outcome", "")),
        "captain/host_success": bool(s.get("host_success")),
        "captain/strict_success": bool(s.get("strict_success")),
        "captain/requests": len(ep.requests),
        "captain/lead_s": fr.lead_s,
        "captain/action": "commanded" if ep.command is not None else "next_state",
        "captain/start_time_ns": int(fr.t_ns[0]),
        "captain/summary_json": json.dumps(s, default=str),
    }


def requests(ep: Episode, fr: Frames, k: int) -> list[dict[str, Any]]:
    t0 = int(fr.t_ns[0])
    out = []
    for r, end in zip(ep.requests, ep.request_end_ns, strict=True):
        cells = [c for c in r.get("calls") or [] if isinstance(c, dict)]
        out.append(
            {
                "episode_index": k,
                "request_index": int(r.get("t", 0)),
                "end_timestamp": (end - t0) / 1e9,
                "reasoning": str(r.get("reasoning") or ""),
                "code": "\n\n".join(str(c.get("code", "")) for c in cells),
                "record_json": json.dumps(r, default=str),
            }
        )
    return out


def provenance(episodes: list[Episode], fps: int, cams: tuple[str, ...]) -> dict[str, Any]:
    return {
        "exporter": "captain_ros.bags.lerobot",
        "fps": fps,
        "resampling": "sample-and-hold (zero-order), "
        "never interpolated; captain.sample_age_s is the held sample's age",
        "action": "what the robot node commanded (/captain/joint_commands: the latest control "
        "tick's joint targets and jaw target, held; before the first command the frame's own "
        "state); for episodes without that topic (captain/action next_state) the next frame's "
        "measured joint positions and jaw openings, which captain.next_state holds for all",
        "cameras": list(cams),
        "sources": [ep.source for ep in episodes],
    }
