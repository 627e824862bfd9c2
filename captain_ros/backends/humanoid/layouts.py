"""Corridor layouts of the cooperative transport task: the base layout and three variants.

A layout is a corridor of constant width around a centreline polyline (the route), with walls on
both sides and caps at both ends, a start support (a pedestal the payload rests on at the start), a
target support at the end of the route, and *route gates*: lines across the corridor at given arc
lengths that the payload centre must cross in order. The scene milestones are the gates, the
target region (payload centre within the support radius of the target) and a terminal milestone
(placement and release, plus retreat for the base task). Geometry only: MJCF is built in
:mod:`captain_ros.backends.humanoid.mjcf`; the milestone predicates live in ``research/coevolve/``.

The two humanoids carry the payload side by side: they face each other across the payload (the
formation axis ``robot_a -> robot_b`` is perpendicular to the route), so transport is lateral
stepping and a corner needs a pivot (an inner robot that turns in place, an outer robot that walks
the arc) or a co-rotation about the payload centre.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from captain_ros.core.errors import InvalidArgumentError, UnknownNameError

WALL_THICKNESS_M = 0.10
WALL_HEIGHT_M = 1.6


@dataclass(frozen=True)
class Gate:
    """A route gate: the line across the corridor at arc length ``s_m`` of the route."""

    name: str
    s_m: float


@dataclass(frozen=True)
class Support:
    """A box pedestal: centre ``(x, y)`` [m], half extents along world x/y [m], top height [m]."""

    name: str
    x_m: float
    y_m: float
    half_x_m: float
    half_y_m: float
    top_z_m: float


@dataclass(frozen=True)
class Layout:
    """A corridor layout.

    Attributes:
        name: ``base``, ``l2``, ``l3`` or ``l4``.
        waypoints: Centreline polyline [m]; the formation starts at the first point and the target
            is the last one.
        width_m: Corridor width between wall faces [m].
        gates: Route gates in route order.
        start_s_m: Arc length of the payload centre at the start [m].
        target_support_top_m: Height of the target pedestal's top [m].
        target_bay_m: Length of a wider bay before the target (0 = none) [m]: the corridor widens
            by ``bay_extra_half_width_m`` on both sides so the robots can retreat.
        description: One line for reports.
    """

    name: str
    waypoints: tuple[tuple[float, float], ...]
    width_m: float
    gates: tuple[Gate, ...]
    start_s_m: float = 0.0
    target_support_top_m: float = 0.70
    target_bay_m: float = 0.0
    bay_extra_half_width_m: float = 0.6
    description: str = ""

    def __post_init__(self) -> None:
        pts = np.asarray(self.waypoints, dtype=float)
        if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 2 or not np.all(np.isfinite(pts)):
            raise InvalidArgumentError("Layout.waypoints must be at least two finite (x, y) points")
        if np.any(np.linalg.norm(np.diff(pts, axis=0), axis=1) < 1e-6):
            raise InvalidArgumentError("Layout.waypoints must not repeat a point")
        if self.width_m <= 0:
            raise InvalidArgumentError("Layout.width_m must be positive")
        s = [g.s_m for g in self.gates]
        if s != sorted(s) or (s and (s[0] <= self.start_s_m or s[-1] >= self.length_m)):
            raise InvalidArgumentError("Layout.gates must be ordered inside the route")

    # --- route geometry ---------------------------------------------------------------------------
    @cached_property
    def _pts(self) -> np.ndarray:
        return np.asarray(self.waypoints, dtype=float)

    @cached_property
    def _cum(self) -> np.ndarray:
        seg = np.linalg.norm(np.diff(self._pts, axis=0), axis=1)
        return np.concatenate([[0.0], np.cumsum(seg)])

    @property
    def length_m(self) -> float:
        """Route length from the first to the last waypoint [m]."""
        return float(self._cum[-1])

    @property
    def n_segments(self) -> int:
        return len(self._pts) - 1

    def segment_heading(self, k: int) -> float:
        """Travel direction of route segment ``k`` [rad]."""
        d = self._pts[k + 1] - self._pts[k]
        return math.atan2(d[1], d[0])

    def segment_of(self, s_m: float) -> int:
        """Index of the segment containing arc length ``s_m``."""
        k = int(np.searchsorted(self._cum, s_m, side="right")) - 1
        return min(max(k, 0), self.n_segments - 1)

    def point_at(self, s_m: float) -> np.ndarray:
        """Centreline point at arc length ``s_m`` (clamped to the route) [m]."""
        s = min(max(s_m, 0.0), self.length_m)
        k = self.segment_of(s)
        a, b = self._pts[k], self._pts[k + 1]
        return a + (b - a) * (s - self._cum[k]) / (self._cum[k + 1] - self._cum[k])

    def tangent_at(self, s_m: float) -> np.ndarray:
        """Unit travel direction at arc length ``s_m``."""
        h = self.segment_heading(self.segment_of(s_m))
        return np.array([math.cos(h), math.sin(h)])

    def corner_s(self) -> tuple[float, ...]:
        """Arc lengths of the interior waypoints (the corners) [m]."""
        return tuple(float(v) for v in self._cum[1:-1])

    def turn_at_corner(self, i: int) -> float:
        """Signed heading change at corner ``i`` (counter-clockwise positive) [rad]."""
        dh = self.segment_heading(i + 1) - self.segment_heading(i)
        return (dh + math.pi) % (2.0 * math.pi) - math.pi

    def project(self, xy: np.ndarray) -> tuple[float, float, int]:
        """Nearest centreline point of ``xy``: ``(s_m, lateral_m, segment)``.

        ``lateral_m`` is positive to the left of the travel direction.
        """
        p = np.asarray(xy, dtype=float)
        best = (math.inf, 0.0, 0.0, 0)
        for k in range(self.n_segments):
            a, b = self._pts[k], self._pts[k + 1]
            ab = b - a
            t = float(np.clip((p - a) @ ab / (ab @ ab), 0.0, 1.0))
            q = a + t * ab
            dist = float(np.linalg.norm(p - q))
            if dist < best[0] - 1e-12:
                tang = ab / np.linalg.norm(ab)
                lat = float(tang[0] * (p - q)[1] - tang[1] * (p - q)[0])
                best = (dist, self._cum[k] + t * float(np.linalg.norm(ab)), lat, k)
        return best[1], best[2], best[3]

    # --- scene parts ------------------------------------------------------------------------------
    def gate(self, name: str) -> Gate:
        for g in self.gates:
            if g.name == name:
                return g
        raise UnknownNameError("gate", name, [g.name for g in self.gates])

    def gate_line(self, g: Gate) -> tuple[np.ndarray, np.ndarray]:
        """Centre point and unit normal (travel direction) of gate ``g``."""
        return self.point_at(g.s_m), self.tangent_at(g.s_m)

    @property
    def start_xy(self) -> np.ndarray:
        return self.point_at(self.start_s_m)

    @property
    def start_heading_rad(self) -> float:
        return self.segment_heading(self.segment_of(self.start_s_m))

    @property
    def target_xy(self) -> np.ndarray:
        return self._pts[-1].copy()

    @property
    def target_heading_rad(self) -> float:
        return self.segment_heading(self.n_segments - 1)

    @property
    def milestone_names(self) -> tuple[str, ...]:
        return (*(g.name for g in self.gates), "target_region", "terminal")

    def supports(self, payload_bottom_start_m: float) -> tuple[Support, Support]:
        """Start pedestal (top at ``payload_bottom_start_m``) and target pedestal."""
        sx, sy = self.start_xy
        tx, ty = self.target_xy
        start = Support("start_support", float(sx), float(sy), 0.15, 0.15, payload_bottom_start_m)
        h = self.target_heading_rad
        # the target pedestal is long across the route (along the formation axis) and short along it
        along, across = 0.15, 0.12
        hx = abs(math.cos(h)) * along + abs(math.sin(h)) * across
        hy = abs(math.sin(h)) * along + abs(math.cos(h)) * across
        target = Support("target_support", float(tx), float(ty), hx, hy, self.target_support_top_m)
        return start, target

    def wall_segments(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Wall centre lines (start, end) [m]: both corridor sides plus the two end caps."""
        half = self.width_m / 2.0 + WALL_THICKNESS_M / 2.0
        pts = self._pts.copy()
        t0 = (pts[1] - pts[0]) / np.linalg.norm(pts[1] - pts[0])
        t1 = (pts[-1] - pts[-2]) / np.linalg.norm(pts[-1] - pts[-2])
        pts[0] -= t0 * 1.0  # room behind the start
        end = pts[-1] + t1 * 1.2  # room beyond the target
        last_corner = max(self.corner_s(), default=0.0)
        bay = self.target_bay_m > 0 and self.length_m - self.target_bay_m > last_corner
        if bay:
            pts[-1] = self.point_at(self.length_m - self.target_bay_m)
        else:
            pts[-1] = end
        left, right = _offset(pts, half), _offset(pts, -half)
        walls = [(left[i], left[i + 1]) for i in range(len(left) - 1)]
        walls += [(right[i], right[i + 1]) for i in range(len(right) - 1)]
        walls.append((left[0], right[0]))
        if not bay:
            walls.append((left[-1], right[-1]))
            return walls
        n = np.array([-t1[1], t1[0]])
        hb = half + self.bay_extra_half_width_m
        walls += [
            (left[-1], pts[-1] + n * hb),
            (right[-1], pts[-1] - n * hb),
            (pts[-1] + n * hb, end + n * hb),
            (pts[-1] - n * hb, end - n * hb),
            (end + n * hb, end - n * hb),
        ]
        return walls


def _offset(pts: np.ndarray, d: float) -> np.ndarray:
    """Polyline ``pts`` offset by ``d`` to the left (mitre joints at the corners)."""
    normals = []
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        t = (b - a) / np.linalg.norm(b - a)
        normals.append(np.array([-t[1], t[0]]))
    out = [pts[0] + d * normals[0]]
    for i in range(1, len(pts) - 1):
        n0, n1 = normals[i - 1], normals[i]
        m = n0 + n1
        m = m / np.linalg.norm(m)
        out.append(pts[i] + m * d / float(m @ n0))
    out.append(pts[-1] + d * normals[-1])
    return np.asarray(out)


LAYOUTS: dict[str, Layout] = {
    "base": Layout(
        "base",
        ((0.0, 0.0), (4.2, 0.0), (4.2, 4.0), (7.6, 4.0)),
        2.4,
        (Gate("gate_1", 2.2), Gate("gate_2", 5.5), Gate("gate_3", 7.4), Gate("gate_4", 9.6)),
        target_bay_m=1.8,
        description="left turn, then right turn; 11.6 m route, corridor 2.4 m, bay at the target",
    ),
    "l2": Layout(
        "l2",
        ((0.0, 0.0), (3.6, 0.0), (3.6, -3.4), (7.4, -3.4), (7.4, -5.6)),
        2.3,
        (Gate("gate_1", 2.0), Gate("gate_2", 4.9), Gate("gate_3", 8.6), Gate("gate_4", 11.9)),
        description="right, left, right; 13.0 m route, corridor 2.3 m",
    ),
    "l3": Layout(
        "l3",
        ((0.0, 0.0), (3.0, 0.0), (3.0, 2.6), (6.2, 2.6)),
        2.15,
        (Gate("gate_1", 1.8), Gate("gate_2", 4.2), Gate("gate_3", 6.4)),
        description="narrow chicane: left then right; 8.8 m route, corridor 2.15 m",
    ),
    "l4": Layout(
        "l4",
        ((0.0, 0.0), (4.0, 0.0), (4.0, 3.6), (0.8, 3.6), (0.8, 6.4)),
        2.3,
        (
            Gate("gate_1", 2.2),
            Gate("gate_2", 5.2),
            Gate("gate_3", 8.3),
            Gate("gate_4", 10.6),
            Gate("gate_5", 12.1),
        ),
        description="U-turn (two left turns) then a right turn; 13.6 m route, corridor 2.3 m",
    ),
}


def get_layout(name: str) -> Layout:
    """The layout called ``name`` (``base``, ``l2``, ``l3``, ``l4``)."""
    try:
        return LAYOUTS[name]
    except KeyError:
        raise UnknownNameError("layout", name, list(LAYOUTS)) from None
