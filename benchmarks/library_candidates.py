"""The competitors of ``bench_libraries.py``: hand-written reference code and library versions.

Each function does one job of the perception or motion code with one implementation, so the
benchmark can time and compare them on identical inputs. The hand-written ones that a library
replaced are kept here verbatim (as they were in ``captain_ros`` before the comparison), so the
comparison stays reproducible after the swap; the winners are called where they now live in
``captain_ros``; the other library candidates call opencv, open3d, scipy or mink. Libraries
that are not installed make their candidates unavailable (``None``), never a crash.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import ConvexHull, QhullError


def optional(module: str) -> Any:
    """The module, or ``None`` when it is not installed (or fails to import)."""
    try:
        return importlib.import_module(module)
    except Exception:  # noqa: BLE001 - e.g. open3d without libusb raises OSError
        return None


cv2 = optional("cv2")
o3d = optional("open3d")
mink = optional("mink")


# --------------------------------------------------------------------- connected components
def joins(
    valid: np.ndarray, break_h: np.ndarray, break_v: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which 4-neighbour pairs are joined: both valid and no break between them."""
    jh = valid[:, :-1] & valid[:, 1:] & ~break_h
    jv = valid[:-1, :] & valid[1:, :] & ~break_v
    return jh, jv


def cc_sparse_graph(
    valid: np.ndarray, break_h: np.ndarray, break_v: np.ndarray
) -> tuple[np.ndarray, int]:
    """Hand-written: components of the pixel graph via ``scipy.sparse.csgraph``."""
    h, w = valid.shape
    idx = np.arange(h * w).reshape(h, w)
    jh, jv = joins(valid, break_h, break_v)
    rows = np.concatenate([idx[:, :-1][jh], idx[:-1, :][jv]])
    cols = np.concatenate([idx[:, 1:][jh], idx[1:, :][jv]])
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(h * w, h * w))
    _, comp = connected_components(graph, directed=False)
    labels = np.zeros(h * w, dtype=np.int32)
    flat = valid.ravel()
    if flat.any():
        _, inv = np.unique(comp[flat], return_inverse=True)
        labels[flat] = inv + 1
        return labels.reshape(h, w), int(inv.max() + 1)
    return labels.reshape(h, w), 0


def lattice(valid: np.ndarray, break_h: np.ndarray, break_v: np.ndarray) -> np.ndarray:
    """(2H-1, 2W-1) uint8 image: pixels at even/even cells, joins between them; its 4-connected
    components are exactly the pixel graph's (breaks sit between pixels)."""
    h, w = valid.shape
    jh, jv = joins(valid, break_h, break_v)
    g = np.zeros((2 * h - 1, 2 * w - 1), dtype=np.uint8)
    g[::2, ::2] = valid
    g[::2, 1::2] = jh
    g[1::2, ::2] = jv
    return g


def cc_lattice_ndimage(
    valid: np.ndarray, break_h: np.ndarray, break_v: np.ndarray
) -> tuple[np.ndarray, int]:
    """``scipy.ndimage.label`` on the lattice image."""
    lab, n = ndimage.label(lattice(valid, break_h, break_v))
    return lab[::2, ::2].astype(np.int32), int(n)


def cc_lattice_opencv(
    valid: np.ndarray, break_h: np.ndarray, break_v: np.ndarray
) -> tuple[np.ndarray, int]:
    """``cv2.connectedComponents`` (4-connectivity) on the lattice image: what ``regions.py``
    runs now."""
    from captain_ros.perception.regions import connected_regions

    return connected_regions(valid, break_h, break_v)


def cc_edge_pixels_opencv(
    valid: np.ndarray, break_h: np.ndarray, break_v: np.ndarray
) -> tuple[np.ndarray, int]:
    """``cv2.connectedComponentsWithStats`` on pixels (an edge marks the pixel left of / above
    it): the usual pixel formulation, which drops one-pixel-wide faces along edges."""
    edge = np.zeros(valid.shape, dtype=bool)
    edge[:, :-1] |= break_h
    edge[:-1, :] |= break_v
    n, lab, _stats, _c = cv2.connectedComponentsWithStats(
        (valid & ~edge).astype(np.uint8), connectivity=4, ltype=cv2.CV_32S
    )
    return lab, int(n - 1)


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two label images split the pixels identically (label numbers may differ)."""
    if not np.array_equal(a > 0, b > 0):
        return False
    pa, pb = a[a > 0].astype(np.int64), b[b > 0].astype(np.int64)
    pairs = np.unique(pa * (int(pb.max(initial=0)) + 1) + pb)
    return len(pairs) == len(np.unique(pa)) == len(np.unique(pb))


# --------------------------------------------------------------------- region growing
def flood_depth_opencv(
    depth_m: np.ndarray, foreground: np.ndarray, u: int, v: int, step_m: float = 0.015
) -> np.ndarray:
    """``cv2.floodFill`` from (u, v) over neighbours whose depth differs by < ``step_m``,
    never entering non-foreground pixels (the table)."""
    h, w = depth_m.shape
    mask = np.ones((h + 2, w + 2), dtype=np.uint8)
    mask[1:-1, 1:-1] = ~foreground
    img = np.nan_to_num(depth_m.astype(np.float32), nan=0.0)
    flags = 4 | cv2.FLOODFILL_MASK_ONLY | (2 << 8)
    cv2.floodFill(img, mask, (int(u), int(v)), 0, step_m, step_m, flags)
    return mask[1:-1, 1:-1] == 2


def flood_edges_opencv(edges: np.ndarray, foreground: np.ndarray, u: int, v: int) -> np.ndarray:
    """``cv2.floodFill`` from (u, v) inside the foreground, stopped by edge pixels (the
    depth/colour edge map of the region code); the edge pixels next to the fill are added back."""
    h, w = edges.shape
    mask = np.ones((h + 2, w + 2), dtype=np.uint8)
    mask[1:-1, 1:-1] = ~(foreground & ~edges)
    if mask[v + 1, u + 1]:
        return np.zeros((h, w), dtype=bool)
    img = np.zeros((h, w), dtype=np.uint8)
    cv2.floodFill(img, mask, (int(u), int(v)), 0, 0, 0, 4 | cv2.FLOODFILL_MASK_ONLY | (2 << 8))
    fill = mask[1:-1, 1:-1] == 2
    return fill | (ndimage.binary_dilation(fill) & edges & foreground)


# --------------------------------------------------------------------- minimum-area rectangle
def _rot(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s], [s, c]])


def rect_hand(xy: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float]:
    """Hand-written: scipy hull + rotating the hull onto each edge direction."""
    try:
        hull = ConvexHull(xy)
        verts = xy[hull.vertices]
        area = float(hull.volume)
    except (QhullError, ValueError):
        verts, area = xy, 0.0
    best = (np.inf, 0.0, np.zeros(2), np.zeros(2))
    edges = np.diff(np.vstack([verts, verts[:1]]), axis=0)
    angles = np.unique(np.round(np.mod(np.arctan2(edges[:, 1], edges[:, 0]), np.pi / 2), 6))
    for a in angles if angles.size else [0.0]:
        local = verts @ _rot(a)
        lo, hi = local.min(axis=0), local.max(axis=0)
        size = hi - lo
        if size[0] * size[1] < best[0]:
            best = (size[0] * size[1], float(a), _rot(a) @ ((lo + hi) / 2), size)
    _, yaw, centre, size = best
    if yaw >= np.pi / 4:
        yaw -= np.pi / 2
        size = size[::-1]
    return float(yaw), centre, np.asarray(size, dtype=float), area


def rect_opencv(xy: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float]:
    """``cv2.minAreaRect`` + ``cv2.contourArea(cv2.convexHull)``: what ``fitting.py`` runs now."""
    from captain_ros.perception.fitting import min_area_rectangle

    return min_area_rectangle(xy)


def hull_scipy(xy: np.ndarray) -> np.ndarray:
    """Hand-written era hull: Qhull vertices (all points when Qhull rejects them)."""
    try:
        return xy[ConvexHull(xy).vertices]
    except (QhullError, ValueError):
        return xy


# --------------------------------------------------------------------- box fits
def box_open3d(points_m: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Centre and (xy sorted, z) extents [m] of an open3d box: ``obb`` (PCA oriented box),
    ``minimal`` (minimal oriented box) or ``aabb`` (axis-aligned). The box axis closest to world
    z gives the height."""
    pc = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.asarray(points_m, dtype=float)))
    if kind == "aabb":
        box = pc.get_axis_aligned_bounding_box()
        return np.asarray(box.get_center()), np.asarray(box.get_extent())
    box = (
        pc.get_oriented_bounding_box() if kind == "obb" else pc.get_minimal_oriented_bounding_box()
    )
    r, ext = np.asarray(box.R), np.asarray(box.extent)
    k = int(np.argmax(np.abs(r[2, :])))
    xy = np.sort(np.delete(ext, k))
    return np.asarray(box.center), np.array([xy[0], xy[1], ext[k]])


# --------------------------------------------------------------------- IK
def mink_solver(
    model: Any,
    site: str,
    dof_adr: np.ndarray,
    qpos_adr: np.ndarray,
    lm_damping: float = 0.0,
    damping: float = 1e-4,
) -> Callable[..., tuple[np.ndarray, int]]:
    """An IK solve of the tool site with mink (FrameTask + ConfigurationLimit, daqp), every joint
    but the arm's frozen; stops on ``residual(q_arm) -> (pos_err_m, rot_err_rad)`` below the
    tolerances of ``captain_ros.motion.ik`` (the same test the DLS solver stops on).
    Returns ``(q_arm, iterations)``."""
    from captain_ros.motion.ik import POS_TOL_M, ROT_TOL_RAD

    config = mink.Configuration(model)
    task = mink.FrameTask(
        site, "site", position_cost=1.0, orientation_cost=1.0, lm_damping=lm_damping
    )
    arm = {int(d) for d in dof_adr}
    limits = [mink.ConfigurationLimit(model)]
    others = [i for i in range(model.nv) if i not in arm]
    constraints = [mink.DofFreezingTask(model, dof_indices=others)] if others else []

    def solve(
        q_full: np.ndarray,
        target: np.ndarray,
        residual: Callable[[np.ndarray], tuple[float, float]],
        max_iters: int = 100,
    ) -> tuple[np.ndarray, int]:
        config.update(q_full.copy())
        task.set_target(mink.SE3.from_matrix(target))
        it = 0
        for it in range(max_iters + 1):  # noqa: B007 - reported
            pe, re = residual(config.q[qpos_adr])
            if (pe < POS_TOL_M and re < ROT_TOL_RAD) or it == max_iters:
                break
            vel = mink.solve_ik(
                config, [task], 1.0, "daqp", damping=damping, limits=limits, constraints=constraints
            )
            config.integrate_inplace(vel, 1.0)
        return config.q[qpos_adr].copy(), it

    return solve


def mink_version() -> str:
    from importlib.metadata import version

    return version("mink")
