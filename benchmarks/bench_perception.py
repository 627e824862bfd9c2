"""Perception benchmark over randomised simulator scenes (issue 4).

For every scene of the task suite (seeds cycle over the tasks) the head camera (and the wrist
cameras) are rendered by :class:`captain_ros.backends.mujoco.MujocoBackend` and compared with
simulator ground truth, which only this benchmark reads:

* geometry: ``measure_object_geometry`` of a ``mark_point`` detection (clicked at the interior of
  the object's ground-truth mask, as a policy clicks the image) and of the best ``segment(text)``
  detection, against the pose and size of single-geom box / cylinder task objects: centre error
  (3-D norm) and extents error (largest absolute error of the sorted xy sizes and the height);
* masks: IoU of the default segmenter's ``segment(text)`` best detection and of ``mark_point``
  against MuJoCo's segmentation render, for task objects with at least ``--min-visible-px``
  visible pixels;
* latency per call (observe, segment, mark_point, measure_object_geometry).

Usage: ``python benchmarks/bench_perception.py --scenes 200 [--out results.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from scipy import ndimage  # noqa: E402

from captain_ros.backends.mujoco import MujocoBackend  # noqa: E402
from captain_ros.perception import PerceptionService  # noqa: E402
from captain_ros.tasks import TASKS, get_task  # noqa: E402
from captain_ros.tasks.scene_parts import COLOURS  # noqa: E402

NOUNS = ("cube", "plate", "cylinder", "peg", "block", "box", "handle", "drawer", "cabinet")


def colour_word(rgba: np.ndarray) -> str:
    """Name of the task palette colour nearest to a geom colour (what an instruction would say)."""
    rgb = np.asarray(rgba[:3], dtype=float)
    if rgb.max() - rgb.min() < 0.15 * max(rgb.max(), 1e-6):
        return "grey"
    rgb = rgb / max(rgb.max(), 1e-6)
    return min(
        COLOURS, key=lambda n: float(np.abs(np.asarray(COLOURS[n]) / max(COLOURS[n]) - rgb).sum())
    )


def ground_truth(backend: MujocoBackend, name: str) -> dict | None:
    """Centre, sorted xy sizes, height and colour word of a single-geom box/cylinder body."""
    m, d = backend.model, backend.data
    bid = m.body(name).id
    geoms = [g for g in range(m.ngeom) if int(m.geom_bodyid[g]) == bid]
    rgba = (
        m.mat_rgba[m.geom_matid[geoms[0]]]
        if geoms and m.geom_matid[geoms[0]] >= 0
        else (m.geom_rgba[geoms[0]] if geoms else np.ones(4))
    )
    out = {"colour": colour_word(rgba)}
    if len(geoms) != 1:
        return out
    g = geoms[0]
    t = int(m.geom_type[g])
    size = m.geom_size[g]
    if t == int(mujoco.mjtGeom.mjGEOM_BOX):
        ext = 2 * size
    elif t == int(mujoco.mjtGeom.mjGEOM_CYLINDER):
        ext = np.array([2 * size[0], 2 * size[0], 2 * size[1]])
    else:
        return out
    rot = d.geom_xmat[g].reshape(3, 3)
    if abs(rot[2, 2]) < 0.99:  # not upright: skip (gravity-aligned fit assumes upright)
        return out
    out |= {"center_m": d.geom_xpos[g].copy(), "xy_m": np.sort(ext[:2]), "z_m": float(ext[2])}
    return out


def prompt_for(name: str, colour: str) -> str:
    words = name.split("_")
    noun = next((w for w in reversed(words) if w in NOUNS), words[-1])
    return f"{colour} {noun}"


def iou(a: np.ndarray, b: np.ndarray) -> float:
    u = (a | b).sum()
    return float((a & b).sum() / u) if u else 0.0


def geom_errors(value: dict, gt: dict) -> tuple[float, float]:
    c = np.asarray(value["center_m"])
    ext = np.asarray(value["extents_m"])
    centre_err = float(np.linalg.norm(c - gt["center_m"]))
    ext_err = float(max(np.abs(np.sort(ext[:2]) - gt["xy_m"]).max(), abs(ext[2] - gt["z_m"])))
    return centre_err, ext_err


def stats(x: list[float]) -> dict:
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return {"n": 0}
    return {
        "n": int(a.size),
        "median": float(np.median(a)),
        "p95": float(np.percentile(a, 95)),
        "mean": float(a.mean()),
        "max": float(a.max()),
    }


def run(
    n_scenes: int, min_visible_px: int, seed0: int, tasks: str = "", merge_views: bool = True
) -> dict:
    names = [t for t in tasks.split(",") if t] or list(TASKS)
    rec: dict[str, list[float]] = defaultdict(list)
    per_task: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    lat: dict[str, list[float]] = defaultdict(list)
    skipped = 0
    outliers: list[dict] = []
    for i in range(n_scenes):
        task = get_task(names[i % len(names)])
        seed = seed0 + i // len(names)
        backend = MujocoBackend(task.sample(seed), render_segmentation=True)
        svc = PerceptionService(backend, merge_views=merge_views)
        t0 = time.perf_counter()
        obs = svc.observe()
        if not obs.success:
            raise RuntimeError(obs.message)
        handle = obs.value["handle"]
        lat["observe_s"].append(time.perf_counter() - t0)
        frame = svc.observations.get(handle).frame("head")
        for k, name in enumerate(backend.scene.object_bodies, start=1):
            gt_mask = frame.segmentation == k
            if gt_mask.sum() < min_visible_px:
                skipped += 1
                continue
            gt = ground_truth(backend, name)
            # click: the most interior pixel of the visible ground-truth mask
            dist = ndimage.distance_transform_edt(np.pad(gt_mask, 1))[1:-1, 1:-1]
            v, u = np.unravel_index(int(np.argmax(dist)), dist.shape)
            t0 = time.perf_counter()
            mp = svc.mark_point(handle, "head", int(u), int(v), label=name)
            lat["mark_point_s"].append(time.perf_counter() - t0)
            m_iou = iou(svc.detection(mp.value["id"]).mask, gt_mask) if mp.success else 0.0
            if m_iou < 0.8:
                outliers.append(
                    {
                        "task": task.name,
                        "seed": seed,
                        "object": name,
                        "via": "mark_point",
                        "iou": round(m_iou, 3),
                        "visible_px": int(gt_mask.sum()),
                    }
                )
            rec["mark_point_iou"].append(m_iou)
            per_task[task.name]["mark_point_iou"].append(m_iou)
            prompt = prompt_for(name, gt["colour"])
            t0 = time.perf_counter()
            sg = svc.segment(prompt, handle, "head")
            lat["segment_s"].append(time.perf_counter() - t0)
            s_iou = (
                iou(svc.detection(sg.value["detections"][0]["id"]).mask, gt_mask)
                if sg.success
                else 0.0
            )
            rec["segment_iou"].append(s_iou)
            per_task[task.name]["segment_iou"].append(s_iou)
            if "center_m" not in gt:
                continue
            for tag, res in (("mark_point", mp), ("segment", sg)):
                if not res.success:
                    rec[f"{tag}_geometry_failed"].append(1.0)
                    continue
                det_id = (
                    res.value["id"] if tag == "mark_point" else res.value["detections"][0]["id"]
                )
                t0 = time.perf_counter()
                mg = svc.measure_object_geometry(det_id)
                lat["measure_object_geometry_s"].append(time.perf_counter() - t0)
                if not mg.success:
                    rec[f"{tag}_geometry_failed"].append(1.0)
                    continue
                ce, ee = geom_errors(mg.value, gt)
                if ce > 0.015 or ee > 0.015:
                    outliers.append(
                        {
                            "task": task.name,
                            "seed": seed,
                            "object": name,
                            "via": tag,
                            "center_err_m": round(ce, 4),
                            "extents_err_m": round(ee, 4),
                            "views": mg.value["views"],
                            "visible_px": int(gt_mask.sum()),
                        }
                    )
                rec[f"{tag}_center_err_m"].append(ce)
                rec[f"{tag}_extents_err_m"].append(ee)
                per_task[task.name][f"{tag}_center_err_m"].append(ce)
                per_task[task.name][f"{tag}_extents_err_m"].append(ee)
        backend.close()
    return {
        "scenes": n_scenes,
        "skipped_objects_min_visible": skipped,
        "metrics": {k: stats(v) for k, v in rec.items()},
        "per_task": {t: {k: stats(v) for k, v in d.items()} for t, d in per_task.items()},
        "latency_s": {k: stats(v) for k, v in lat.items()},
        "outliers": outliers,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=200)
    ap.add_argument("--min-visible-px", type=int, default=40)
    ap.add_argument("--seed0", type=int, default=0)
    ap.add_argument("--tasks", default="", help="comma-separated subset of the task suite")
    ap.add_argument(
        "--no-merge-views",
        action="store_true",
        help="measure from the clicked camera only (no wrist/head point merging)",
    )
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    t0 = time.time()
    res = run(args.scenes, args.min_visible_px, args.seed0, args.tasks, not args.no_merge_views)
    res["wall_s"] = time.time() - t0
    text = json.dumps(res, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    m = res["metrics"]
    for k in sorted(m):
        print(k, {a: round(b, 4) if isinstance(b, float) else b for a, b in m[k].items()})
    for k, v in res["latency_s"].items():
        print(k, {a: round(b, 4) if isinstance(b, float) else b for a, b in v.items()})
    print("outliers", len(res["outliers"]))
    print("wall_s", round(res["wall_s"], 1))


if __name__ == "__main__":
    main()
