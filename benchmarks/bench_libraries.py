"""Hand-written perception/motion code against the field's libraries (issue 10, item 6).

On MuJoCo scenes of the six tasks (TRAIN seeds only; ground truth from the simulator, read by this
benchmark only) and on IK targets sampled in the rigs' workspace, each job is done by every
candidate of :mod:`library_candidates` on identical inputs, and compared on accuracy and speed:

* connected components of the region code (pixel graph with breaks *between* pixels): label
  images compared with the hand-written ``scipy.sparse.csgraph`` version, per frame, for the
  object and the part thresholds; time per frame;
* region growing from a click (``mark_point``): the region code's lookup vs ``cv2.floodFill`` on
  depth or on the edge map; IoU with MuJoCo's segmentation render at the interior pixel of each
  visible task object; time of a first click on a frame and of a later click;
* minimum-area rectangle of a detection's xy footprint: hand-written (scipy hull + rotating
  edges) vs ``cv2.minAreaRect``: area, yaw, centre and size differences, time per call;
* box fitting of a detection's points (wrist view merged, as ``measure_object_geometry``): the
  gravity-aligned fit vs open3d's oriented / minimal oriented / axis-aligned boxes: centre and
  extents error against the simulator's geoms (upright single-geom boxes and cylinders);
* IK of the tool site: damped least squares (``captain_ros.motion.ik``) vs mink (daqp), from the
  home pose (cold) and from 0.02 rad beside the solution (warm, as along a sweep): convergence
  (1 mm / 0.01 rad), residuals, time per solve, iterations; beside it the cost of one kinematics +
  Jacobian evaluation (the floor of any Jacobian-based iteration).

Usage: ``python benchmarks/bench_libraries.py --scenes 60 --ik-targets 300 --out libs.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import library_candidates as lc  # noqa: E402
import numpy as np  # noqa: E402
from bench_perception import geom_errors, ground_truth, iou, stats  # noqa: E402
from scipy import ndimage  # noqa: E402

from captain_ros.backends.mujoco import MujocoBackend  # noqa: E402
from captain_ros.core.geometry import Pose, matrix_to_quat, quat_multiply  # noqa: E402
from captain_ros.motion import ik  # noqa: E402
from captain_ros.perception import PerceptionService, fitting, regions  # noqa: E402
from captain_ros.tasks import TASKS, get_task  # noqa: E402

HELDOUT = range(1000, 2000)
REGION_CODE = "hand: over-segmentation + region lookup (regions.py)"
CC = {
    "hand: scipy.sparse.csgraph": lc.cc_sparse_graph,
    "scipy.ndimage.label (lattice)": lc.cc_lattice_ndimage,
    "cv2.connectedComponents (lattice, regions.py now)": lc.cc_lattice_opencv,
    "cv2.connectedComponentsWithStats (edge pixels)": lc.cc_edge_pixels_opencv if lc.cv2 else None,
}
RECT = {
    "hand: scipy hull + rotating edges": lc.rect_hand,
    "cv2.minAreaRect (fitting.py now)": lc.rect_opencv,
}


def timed(fn: Callable[..., Any], *args: Any, repeat: int = 3) -> tuple[Any, float]:
    """Result of ``fn(*args)`` and the best wall time of ``repeat`` calls [s]."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return out, best


@contextlib.contextmanager
def hand_fitting() -> Iterator[None]:
    """``fitting.fit_geometry`` with its former hand-written rectangle and scipy hull."""
    saved = fitting.min_area_rectangle, fitting.hull_vertices
    fitting.min_area_rectangle, fitting.hull_vertices = lc.rect_hand, lc.hull_scipy
    try:
        yield
    finally:
        fitting.min_area_rectangle, fitting.hull_vertices = saved


def scenes(n: int, seed0: int, tasks: list[str]) -> Iterator[tuple[str, int, MujocoBackend]]:
    for i in range(n):
        task = get_task(tasks[i % len(tasks)])
        seed = seed0 + i // len(tasks)
        if seed in HELDOUT:
            raise SystemExit(f"seed {seed} is a held-out seed (1000-1999); use training seeds")
        backend = MujocoBackend(task.sample(seed), render_segmentation=True)
        try:
            yield task.name, seed, backend
        finally:
            backend.close()


def bench_components(frame: Any, rec: dict[str, list[float]]) -> None:
    pts = regions.world_points_image(frame)
    fg = regions.foreground(pts, regions.estimate_support_z(pts))
    for tag, params in (("object", regions.OBJECT_EDGES), ("part", regions.PART_EDGES)):
        bh, bv = regions.pair_breaks(frame, params)
        ref, _ = lc.cc_sparse_graph(fg, bh, bv)
        _, dt = timed(lc.lattice, fg, bh, bv)  # floor of the lattice versions: drawing the image
        rec["cc|floor: lattice image build (numpy)|ms"].append(1e3 * dt)
        for name, fn in CC.items():
            if fn is None:
                continue
            (lab, _n), dt = timed(fn, fg, bh, bv)
            rec[f"cc|{name}|ms"].append(1e3 * dt)
            rec[f"cc|{name}|same_partition_{tag}"].append(float(lc.same_partition(lab, ref)))
            rec[f"cc|{name}|identical_labels_{tag}"].append(float(np.array_equal(lab, ref)))
            rec[f"cc|{name}|pixels_lost_{tag}"].append(float(((ref > 0) & (lab == 0)).sum()))


def bench_clicks(
    svc: PerceptionService,
    handle: str,
    frame: Any,
    backend: MujocoBackend,
    rec: dict[str, list[float]],
    task: str,
) -> None:
    """Region growing, rectangles and box fits of every visible task object of the head view."""
    seg = svc.default_segmenter
    regs, t_first = timed(regions.over_segment, frame, repeat=1)
    edges, t_edges = timed(regions.edge_map, frame, repeat=1)
    fg = regions.foreground(regs.points_m, regs.support_z_m)
    seg._cache = [[frame.rgb, regs, None]]  # the service reuses this over-segmentation
    obs = svc.observations.get(handle)
    for k, name in enumerate(backend.scene.object_bodies, start=1):
        gt_mask = frame.segmentation == k
        if gt_mask.sum() < 40:
            continue
        dist = ndimage.distance_transform_edt(np.pad(gt_mask, 1))[1:-1, 1:-1]
        v, u = (int(x) for x in np.unravel_index(int(np.argmax(dist)), dist.shape))
        mask, t_look = timed(regions.grow_from_seed, frame, u, v, "object", regs)
        _iou(rec, REGION_CODE, task, iou(mask, gt_mask))
        rec[f"grow|{REGION_CODE}|first_click_ms"].append(1e3 * (t_first + t_look))
        rec[f"grow|{REGION_CODE}|later_click_ms"].append(1e3 * t_look)
        if lc.cv2 is not None:
            m2, t2 = timed(lc.flood_depth_opencv, frame.depth_m, fg, u, v)
            _iou(rec, "cv2.floodFill (depth, 15 mm)", task, iou(m2, gt_mask))
            rec["grow|cv2.floodFill (depth, 15 mm)|first_click_ms"].append(1e3 * t2)
            rec["grow|cv2.floodFill (depth, 15 mm)|later_click_ms"].append(1e3 * t2)
            m3, t3 = timed(lc.flood_edges_opencv, edges, fg, u, v)
            _iou(rec, "cv2.floodFill (edge map)", task, iou(m3, gt_mask))
            rec["grow|cv2.floodFill (edge map)|first_click_ms"].append(1e3 * (t_edges + t3))
            rec["grow|cv2.floodFill (edge map)|later_click_ms"].append(1e3 * t3)
        mp = svc.mark_point(handle, "head", u, v, label=name)
        if not mp.success:
            continue
        det = svc.detection(mp.value["id"])
        bench_rectangles(det.points_m[:, :2], rec)
        gt = ground_truth(backend, name)
        if "center_m" in gt:
            extra, _ = svc._other_view_points(det, obs)
            pts = np.concatenate([det.points_m, extra]) if len(extra) else det.points_m
            bench_boxes(pts, det.support_z_m, gt, rec)


def _iou(rec: dict[str, list[float]], name: str, task: str, value: float) -> None:
    rec[f"grow|{name}|iou"].append(value)
    rec[f"grow|{name}|iou_{task}"].append(value)


def bench_rectangles(xy: np.ndarray, rec: dict[str, list[float]]) -> None:
    ref, _ = timed(lc.rect_hand, xy, repeat=1)
    for name, fn in RECT.items():
        if fn is None:
            continue
        (yaw, centre, size, area), dt = timed(fn, xy)
        rec[f"rect|{name}|us"].append(1e6 * dt)
        dyaw = abs((yaw - ref[0] + np.pi / 4) % (np.pi / 2) - np.pi / 4)
        rec[f"rect|{name}|area_rel_diff"].append(
            abs(size[0] * size[1] / max(ref[2][0] * ref[2][1], 1e-12) - 1)
        )
        rec[f"rect|{name}|yaw_diff_rad"].append(float(dyaw))
        rec[f"rect|{name}|centre_diff_m"].append(float(np.linalg.norm(centre - ref[1])))
        rec[f"rect|{name}|size_diff_m"].append(float(np.abs(np.sort(size) - np.sort(ref[2])).max()))
        rec[f"rect|{name}|hull_area_rel_diff"].append(abs(area / max(ref[3], 1e-12) - 1))


def bench_boxes(pts: np.ndarray, support_z_m: float, gt: dict, rec: dict[str, list[float]]) -> None:
    def gravity(fit: Callable[..., Any]) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        def run() -> tuple[np.ndarray, np.ndarray]:
            g = fit(pts, support_z_m)
            return g.center_m, g.extents_m

        return run

    def hand() -> tuple[np.ndarray, np.ndarray]:
        with hand_fitting():
            return gravity(fitting.fit_geometry)()

    fits: dict[str, Callable[[], tuple[np.ndarray, np.ndarray]] | None] = {
        "hand: gravity-aligned, scipy rectangle": hand,
        "gravity-aligned, cv2 rectangle (fitting.py now)": gravity(fitting.fit_geometry),
    }
    for kind in ("obb", "minimal", "aabb"):
        fits[f"open3d {kind}"] = (lambda k=kind: lc.box_open3d(pts, k)) if lc.o3d else None
    for name, fn in fits.items():
        if fn is None:
            continue
        (c, e), dt = timed(fn)
        ce, ee = geom_errors({"center_m": c, "extents_m": e}, gt)
        rec[f"box|{name}|centre_err_mm"].append(1e3 * ce)
        rec[f"box|{name}|extents_err_mm"].append(1e3 * ee)
        rec[f"box|{name}|ms"].append(1e3 * dt)


def bench_ik(n_targets: int, rec: dict[str, list[float]]) -> None:
    """DLS vs mink on reachable targets (FK of random in-limit configurations inside the
    workspace) of the single-arm rig and the left arm of the dual rig."""
    rng = np.random.default_rng(0)
    for task_name, arm in (("pick_place", "arm"), ("two_arm_lift", "left")):
        backend = MujocoBackend(get_task(task_name).sample(0))
        kin, spec, rig = backend.kinematics(arm), backend.spec.arm(arm), backend.spec
        lo, hi = np.asarray(spec.lower_rad), np.asarray(spec.upper_rad)
        home = np.asarray(backend.joint_state(arm).position_rad, dtype=float)
        adr = backend._arms[arm]
        site = backend.model.site(adr.tcp_site).name
        minks = (
            {
                f"mink {lc.mink_version()} (daqp, lm_damping {d:g})": lc.mink_solver(
                    backend.model, site, adr.dof_adr, adr.qpos_adr, d
                )
                for d in (0.0, 1.0)
            }
            if lc.mink
            else {}
        )
        q_live = backend.data.qpos.copy()
        got = 0
        while got < n_targets // 2:
            q_true = rng.uniform(lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo))
            t = ik.tool_matrix(kin, q_true)
            p = t[:3, 3]
            if np.any(p < rig.workspace_min_m) or np.any(p > rig.workspace_max_m) or p[2] < 0.05:
                continue
            got += 1
            target = Pose(p.copy(), matrix_to_quat(t[:3, :3]))
            residual = functools.partial(_residual, kin, target)
            for start, q0 in (
                ("cold", home),
                ("warm", np.clip(q_true + rng.normal(0, 0.02, 6), lo, hi)),
            ):
                res, dt = timed(ik.solve, kin, target, q0, lo, hi, 100, repeat=1)
                _record_ik(
                    rec,
                    "DLS (captain_ros.motion.ik)",
                    start,
                    res.position_error_m,
                    res.rotation_error_rad,
                    dt,
                    res.iterations,
                )
                if not res.converged:  # where the unconverged solves stopped
                    at_limit = np.any((res.q <= lo + 1e-6) | (res.q >= hi - 1e-6))
                    rec[f"ik|DLS (captain_ros.motion.ik)|{start}|failed_at_a_joint_limit"].append(
                        float(at_limit)
                    )
                for name, mk in minks.items():
                    q_full = q_live.copy()
                    q_full[adr.qpos_adr] = q0
                    (q, it), dt = timed(mk, q_full, t, residual, 100, repeat=1)
                    pe, re = residual(q)
                    inside = bool(np.all(q >= lo - 1e-6) and np.all(q <= hi + 1e-6))
                    _record_ik(rec, name, start, pe, re, dt, it, inside)
            _goal_checks(rec, "joint-space", kin, target, t, home, lo, hi, q_live, adr, minks)
        for _ in range(n_targets // 2):  # task-like goals: over the table, tool down +- 20 deg tilt
            target = task_target(rng, np.asarray(spec.base_pose.position_m))
            _goal_checks(
                rec, "task", kin, target, target.matrix(), home, lo, hi, q_live, adr, minks
            )
        q = home.copy()
        for _ in range(200):  # floor: one kinematics + Jacobian evaluation at a new configuration
            q = q + 1e-4
            t0 = time.perf_counter()
            ik.tool_matrix(kin, q)
            kin.jacobian(q)
            rec["ik|floor: mj_kinematics + mj_comPos + mj_jacSite|all|us"].append(
                1e6 * (time.perf_counter() - t0)
            )
        backend.close()


def task_target(rng: np.random.Generator, base_m: np.ndarray) -> Pose:
    """A goal a task asks for: 0.15-0.45 m in front of the arm base, +-0.25 m beside it, 0.01-0.14 m
    above the table (the tool-down height the PiPER's J5 limit allows there); tool pointing down,
    yawed +-90 deg, tilted up to 20 deg about a random horizontal axis. Not every such goal is
    reachable."""
    p = base_m + np.array([rng.uniform(0.15, 0.45), rng.uniform(-0.25, 0.25), 0.0])
    p[2] = rng.uniform(0.01, 0.14)
    yaw, tilt, axis = (
        rng.uniform(-np.pi / 2, np.pi / 2),
        rng.uniform(0, np.pi / 9),
        rng.uniform(0, 2 * np.pi),
    )
    down = np.array([0.0, 0.0, 1.0, 0.0])  # TOOL_DOWN_QUAT_WXYZ of the rig
    q_yaw = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    q_tilt = np.array(
        [np.cos(tilt / 2), np.cos(axis) * np.sin(tilt / 2), np.sin(axis) * np.sin(tilt / 2), 0.0]
    )
    return Pose(p, quat_multiply(q_tilt, quat_multiply(q_yaw, down)))


def _goal_checks(
    rec: dict[str, list[float]],
    kind: str,
    kin: Any,
    target: Pose,
    t: np.ndarray,
    home: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    q_live: np.ndarray,
    adr: Any,
    minks: dict[str, Any],
) -> None:
    """The planner's goal check with each solver: from the current configuration, then 5 seeded
    random restarts (``planner.check_goal``); records convergence and which solver alone found one."""
    residual = functools.partial(_residual, kin, target)
    seeds = [home, *np.random.default_rng(0).uniform(lo, hi, (5, 6))]
    t0 = time.perf_counter()
    for s0 in seeds:
        res = ik.solve(kin, target, s0, lo, hi, 80)
        if res.converged:
            break
    dls_ok = res.converged
    _record_ik(
        rec,
        "DLS (captain_ros.motion.ik)",
        f"restarts_{kind}",
        res.position_error_m,
        res.rotation_error_rad,
        time.perf_counter() - t0,
        res.iterations,
    )
    for name, mk in minks.items():
        t0 = time.perf_counter()
        for s0 in seeds:
            q_full = q_live.copy()
            q_full[adr.qpos_adr] = s0
            q, it = mk(q_full, t, residual, 80)
            pe, re = residual(q)
            if pe < ik.POS_TOL_M and re < ik.ROT_TOL_RAD:
                break
        inside = bool(np.all(q >= lo - 1e-6) and np.all(q <= hi + 1e-6))
        ok = _record_ik(rec, name, f"restarts_{kind}", pe, re, time.perf_counter() - t0, it, inside)
        rec[f"ik|{name}|restarts_{kind}|only_mink_converged"].append(float(ok and not dls_ok))
        rec[f"ik|{name}|restarts_{kind}|only_dls_converged"].append(float(dls_ok and not ok))


def _residual(kin: Any, target: Pose, q: np.ndarray) -> tuple[float, float]:
    return ik._norms(ik.pose_error(kin, q, target))


def _record_ik(
    rec: dict[str, list[float]],
    name: str,
    start: str,
    pe: float,
    re: float,
    dt: float,
    it: int,
    inside: bool = True,
) -> bool:
    ok = pe < ik.POS_TOL_M and re < ik.ROT_TOL_RAD and inside
    rec[f"ik|{name}|{start}|converged"].append(float(ok))
    rec[f"ik|{name}|{start}|ms"].append(1e3 * dt)
    rec[f"ik|{name}|{start}|iterations"].append(float(it))
    if ok:
        rec[f"ik|{name}|{start}|pos_err_mm"].append(1e3 * pe)
    return ok


def run(n_scenes: int, seed0: int, tasks: list[str], n_targets: int) -> dict[str, Any]:
    rec: dict[str, list[float]] = defaultdict(list)
    for task, _seed, backend in scenes(n_scenes, seed0, tasks):
        svc = PerceptionService(backend)
        obs = svc.observe()
        if not obs.success:
            raise RuntimeError(obs.message)
        handle = obs.value["handle"]
        for frame in svc.observations.get(handle).frames.values():
            bench_components(frame, rec)
        bench_clicks(svc, handle, svc.observations.get(handle).frame("head"), backend, rec, task)
    if n_targets:
        bench_ik(n_targets, rec)
    return {
        "metrics": {k: stats(v) for k, v in sorted(rec.items())},
        "versions": versions(),
        "machine": f"{platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
    }


def versions() -> dict[str, str]:
    import scipy

    out = {"python": sys.version.split()[0], "numpy": np.__version__, "scipy": scipy.__version__}
    for name, mod in (("opencv", lc.cv2), ("open3d", lc.o3d), ("mink", lc.mink)):
        out[name] = getattr(mod, "__version__", "?") if mod is not None else "not installed"
    if lc.mink is not None:
        out["mink"] = lc.mink_version()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=60)
    ap.add_argument(
        "--seed0", type=int, default=0, help="first TRAIN seed (held-out 1000-1999 refused)"
    )
    ap.add_argument("--tasks", default="", help="comma-separated subset of the task suite")
    ap.add_argument("--ik-targets", type=int, default=300, help="IK targets over both rigs")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    t0 = time.time()
    res = run(
        args.scenes,
        args.seed0,
        [t for t in args.tasks.split(",") if t] or list(TASKS),
        args.ik_targets,
    )
    res["wall_s"] = round(time.time() - t0, 1)
    res["command"] = " ".join(["python", *sys.argv])
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    for k, v in res["metrics"].items():
        print(k, {a: round(b, 4) if isinstance(b, float) else b for a, b in v.items()})
    print("versions", res["versions"], "|", res["machine"], "| wall", res["wall_s"], "s")


if __name__ == "__main__":
    main()
