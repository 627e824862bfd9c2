"""The opencv-backed pieces of the region and fitting code against independent oracles.

``connected_regions`` (``cv2.connectedComponents`` on the pixel/join lattice) must give the very
labels of a plain graph search over the pixel graph (breaks between pixels); ``min_area_rectangle``
(``cv2.minAreaRect``) the smallest rectangle of a brute-force rotation search; ``hull_vertices``
(``cv2.convexHull``) Qhull's vertices. See docs/libraries.md for the benchmark behind the swap.
"""

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import ConvexHull

from captain_ros.perception.fitting import fit_geometry, hull_vertices, min_area_rectangle
from captain_ros.perception.regions import connected_regions


def _graph_labels(valid, bh, bv):
    """Oracle: components of the pixel graph, numbered by their first pixel in raster order."""
    h, w = valid.shape
    idx = np.arange(h * w).reshape(h, w)
    jh = valid[:, :-1] & valid[:, 1:] & ~bh
    jv = valid[:-1, :] & valid[1:, :] & ~bv
    rows = np.concatenate([idx[:, :-1][jh], idx[:-1, :][jv]])
    cols = np.concatenate([idx[:, 1:][jh], idx[1:, :][jv]])
    g = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(h * w, h * w))
    _, comp = connected_components(g, directed=False)
    out = np.zeros(h * w, dtype=np.int32)
    flat = valid.ravel()
    if flat.any():
        _, inv = np.unique(comp[flat], return_inverse=True)
        out[flat] = inv + 1
    return out.reshape(h, w)


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (9, 1), (37, 53), (128, 96)])
@pytest.mark.parametrize("density", [0.2, 0.6, 0.95])
def test_connected_regions_equal_the_pixel_graph_components(shape, density):
    rng = np.random.default_rng(hash((shape, density)) % 2**32)
    valid = rng.random(shape) < density
    bh = rng.random((shape[0], shape[1] - 1)) < 0.3
    bv = rng.random((shape[0] - 1, shape[1])) < 0.3
    labels, n = connected_regions(valid, bh, bv)
    ref = _graph_labels(valid, bh, bv)
    assert labels.dtype == np.int32 and labels.shape == shape
    np.testing.assert_array_equal(labels, ref)
    assert n == int(ref.max())


def test_a_break_between_pixels_keeps_a_one_pixel_wide_face():
    valid = np.ones((5, 6), dtype=bool)
    bh = np.zeros((5, 5), dtype=bool)
    bh[:, 2] = bh[:, 3] = True  # column 3 is cut off on both sides, but stays a region
    labels, n = connected_regions(valid, bh, np.zeros((4, 6), dtype=bool))
    assert (
        n == 3 and set(np.unique(labels[:, 3])) == {2} and labels[0, 0] == 1 and labels[0, 5] == 3
    )


def _rect_points(centre, size, yaw, n, rng, edge_only=False):
    p = rng.uniform(-0.5, 0.5, (n, 2)) * size
    if edge_only:
        k = rng.integers(0, 2, n)
        p[np.arange(n), k] = np.sign(rng.uniform(-1, 1, n)) * np.asarray(size)[k] / 2
    c, s = np.cos(yaw), np.sin(yaw)
    return p @ np.array([[c, -s], [s, c]]).T + centre


@pytest.mark.parametrize("yaw", [0.0, 0.3, -0.7, 1.2, np.pi / 4 - 1e-3])
def test_min_area_rectangle_matches_a_brute_force_search(yaw):
    rng = np.random.default_rng(7)
    xy = _rect_points(
        np.array([0.42, -0.17]), np.array([0.05, 0.03]), yaw, 600, rng, edge_only=True
    )
    got_yaw, centre, size, hull_area = min_area_rectangle(xy)
    assert -np.pi / 4 <= got_yaw < np.pi / 4
    angles = np.linspace(0, np.pi / 2, 20001)
    areas = []
    for a in angles:
        r = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        loc = xy @ r
        areas.append(np.prod(loc.max(0) - loc.min(0)))
    assert size[0] * size[1] <= min(areas) * (1 + 1e-6)  # no rotation of the grid does better
    assert size[0] * size[1] == pytest.approx(0.05 * 0.03, rel=1e-5)
    assert abs((got_yaw - yaw + np.pi / 4) % (np.pi / 2) - np.pi / 4) < 2e-3
    np.testing.assert_allclose(np.sort(size), [0.03, 0.05], atol=2e-4)
    np.testing.assert_allclose(centre, [0.42, -0.17], atol=2e-4)
    assert hull_area == pytest.approx(ConvexHull(xy).volume, rel=1e-6)


def test_hull_vertices_are_qhulls_and_degenerate_inputs_do_not_fail():
    rng = np.random.default_rng(3)
    xy = rng.normal(0.4, 0.02, (500, 2))
    ours = {tuple(p) for p in hull_vertices(xy)}
    assert ours == {tuple(p) for p in xy[ConvexHull(xy).vertices]}
    line = np.column_stack([np.linspace(0.3, 0.4, 20), np.full(20, 0.1)])
    yaw, centre, size, area = min_area_rectangle(line)
    assert area == pytest.approx(0.0, abs=1e-12) and max(size) == pytest.approx(0.1, abs=1e-6)
    for pts in (np.zeros((0, 2)), np.array([[0.3, 0.1]]), np.array([[0.3, 0.1]] * 7)):
        _, _, size, area = min_area_rectangle(pts)
        assert np.all(size == 0) and area == 0.0
    assert len(hull_vertices(np.array([[0.1, 0.2], [0.3, 0.4]]))) == 2


def test_world_scale_coordinates_keep_sub_micron_precision():
    rng = np.random.default_rng(11)
    xy = _rect_points(np.array([123.4567, -98.7654]), np.array([0.04, 0.02]), 0.25, 400, rng, True)
    yaw, centre, size, _ = min_area_rectangle(xy)
    np.testing.assert_allclose(centre, [123.4567, -98.7654], atol=1e-6)
    np.testing.assert_allclose(np.sort(size), [0.02, 0.04], atol=1e-6)
    pts = np.column_stack([xy, rng.uniform(0.0, 0.03, len(xy))])
    g = fit_geometry(pts, 0.0, "box")
    assert g.yaw_rad == pytest.approx(0.25, abs=1e-5)
