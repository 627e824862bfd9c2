"""``meta/stats.json`` and the per-episode ``stats/*`` columns, computed as LeRobot computes them.

Per feature: ``min``, ``max``, ``mean``, ``std``, ``count`` and the quantiles ``q01 q10 q50 q90
q99``, per coordinate (vectors) or per channel (videos, shape ``3 x 1 x 1``, pixel values
scaled to [0, 1] over up to 100 evenly spaced frames per episode, downsampled to ~150 px like
LeRobot's ``sample_images``). Strings have none. Episode stats are exact (``numpy``); dataset
stats aggregate them the way LeRobot's ``aggregate_stats`` does: extremes of the extremes,
count-weighted means, the pooled variance, count-weighted quantiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
IMAGE_SAMPLES = 100
IMAGE_SIZE = 150


def feature_stats(
    values: np.ndarray, axis: int | tuple[int, ...] = 0, keepdims: bool = False
) -> dict[str, np.ndarray]:
    """Stats of one episode's values (rows = frames) over ``axis``."""
    x = np.asarray(values, np.float64)
    if x.ndim == 1:
        x, keepdims = x[:, None], False
    out = {
        "min": x.min(axis=axis, keepdims=keepdims),
        "max": x.max(axis=axis, keepdims=keepdims),
        "mean": x.mean(axis=axis, keepdims=keepdims),
        "std": x.std(axis=axis, keepdims=keepdims),
    }
    qs = np.quantile(x, list(QUANTILES.values()), axis=axis, keepdims=keepdims)  # one partition
    for i, k in enumerate(QUANTILES):
        out[k] = qs[i]
    out["count"] = np.array([x.shape[0]])
    return out


def image_sample_indices(n: int) -> np.ndarray:
    """Evenly spaced frame indices whose images go into the video stats."""
    return np.unique(np.round(np.linspace(0, n - 1, min(n, IMAGE_SAMPLES))).astype(int))


def image_stats(frames: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Per-channel stats (shape ``3 x 1 x 1``, values in [0, 1]) of sampled ``H x W x 3`` uint8
    frames, exact, from each channel's 256-bin histogram (numpy's linear-interpolation quantiles)."""
    step = max(1, max(frames[0].shape[:2]) // IMAGE_SIZE)
    x = np.stack([f[::step, ::step] for f in frames]).reshape(-1, 3).astype(np.int32)
    hist = np.bincount((x + np.array([0, 256, 512], np.int32)).ravel(), minlength=768).reshape(
        3, 256
    )
    levels = np.arange(256, dtype=np.float64)
    out: dict[str, list[float]] = {k: [] for k in ("min", "max", "mean", "std", *QUANTILES)}
    for c in range(3):
        h = hist[c].astype(np.float64)
        n = h.sum()
        mean = (levels * h).sum() / n
        nz = np.nonzero(h)[0]
        out["min"].append(nz[0])
        out["max"].append(nz[-1])
        out["mean"].append(mean)
        out["std"].append(np.sqrt(max(0.0, (levels**2 * h).sum() / n - mean**2)))
        cum = np.cumsum(h)
        for k, q in QUANTILES.items():
            pos = q * (n - 1)  # the sorted values' (fractional) position, as np.quantile takes it
            lo, hi = (
                np.searchsorted(cum, np.floor(pos), side="right"),
                np.searchsorted(cum, np.ceil(pos), side="right"),
            )
            out[k].append(lo + (hi - lo) * (pos - np.floor(pos)))
    stats = {k: (np.array(v, np.float64) / 255.0).reshape(3, 1, 1) for k, v in out.items()}
    stats["count"] = np.array([len(frames)])
    return stats


def aggregate(
    per_episode: list[dict[str, dict[str, np.ndarray]]],
) -> dict[str, dict[str, np.ndarray]]:
    """Dataset stats from episode stats (LeRobot's aggregation)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for key in per_episode[0]:
        ss = [e[key] for e in per_episode]
        counts = np.array([s["count"][0] for s in ss], np.float64)
        w = counts / counts.sum()
        shape = ss[0]["mean"].shape
        wb = w.reshape((-1,) + (1,) * len(shape))
        means = np.stack([s["mean"] for s in ss])
        mean = (wb * means).sum(0)
        var = (wb * (np.stack([s["std"] for s in ss]) ** 2 + (means - mean) ** 2)).sum(0)
        agg = {
            "min": np.min([s["min"] for s in ss], 0),
            "max": np.max([s["max"] for s in ss], 0),
            "mean": mean,
            "std": np.sqrt(var),
            "count": np.array([int(counts.sum())]),
        }
        for q in QUANTILES:
            agg[q] = (wb * np.stack([s[q] for s in ss])).sum(0)
        out[key] = agg
    return out


def to_json(stats: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:
    return {k: {s: np.asarray(v).tolist() for s, v in d.items()} for k, d in stats.items()}


def flat_columns(stats: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:
    """``stats/<feature>/<stat>`` columns of one episode's row (nested lists)."""
    return {
        f"stats/{k}/{s}": np.asarray(v).tolist() for k, d in stats.items() for s, v in d.items()
    }
