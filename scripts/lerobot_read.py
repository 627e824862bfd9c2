"""Read a dataset with LeRobot's own ``LeRobotDataset`` and dump what it returns as JSON.

The independent check of ``captain bag export --format lerobot`` (docs/data.md): it runs in
LeRobot's environment, not ours (lerobot 0.6 needs Python >= 3.12 and its own torch), so it
imports nothing of captain_ros. ``scripts/lerobot_env.sh`` builds that environment;
tests/test_lerobot_export.py compares this dump with the bags the dataset came from.

Usage: PYTHON_OF_LEROBOT scripts/lerobot_read.py DATASET_DIR OUT.json
"""

from __future__ import annotations

import json
import sys

import numpy as np


def main(root: str, out: str) -> None:
    import lerobot
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("local/captain_export", root=root)
    cams = list(ds.meta.video_keys)
    frames = []
    for i in range(len(ds)):
        item = ds[i]
        row = {
            "index": int(item["index"]),
            "episode_index": int(item["episode_index"]),
            "timestamp": float(item["timestamp"]),
            "task": item["task"],
            "observation.state": item["observation.state"].tolist(),
            "action": item["action"].tolist(),
            "next.success": bool(item["next.success"]),
            "captain.request_index": int(item["captain.request_index"]),
        }
        for cam in cams:  # C x H x W float in [0, 1]: an 8 x 8 mean-pooled thumbnail, 0..255
            img = item[cam].numpy()
            c, h, w = img.shape
            thumb = img[:, : h - h % 8, : w - w % 8].reshape(c, 8, h // 8, 8, w // 8).mean((2, 4))
            row[cam] = (thumb * 255).round(2).tolist()
        frames.append(row)
    stats = {k: {s: np.asarray(v).tolist() for s, v in d.items()} for k, d in ds.meta.stats.items()}
    with open(out, "w") as f:
        json.dump(
            {
                "lerobot_version": lerobot.__version__,
                "num_frames": ds.num_frames,
                "num_episodes": ds.num_episodes,
                "fps": ds.fps,
                "cameras": cams,
                "video_backend": getattr(ds, "_video_backend", None),
                "frames": frames,
                "stats": stats,
            },
            f,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
