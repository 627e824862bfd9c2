"""Perception helpers of the scripted expert's session library (see :mod:`.kit`).

Detections and geometry records are the values of ``segment`` / ``mark_point`` /
``measure_object_geometry`` Results: dicts with ``centroid_m``, ``extents_m``, ``score``, ... and
``center_m``, ``extents_m``, ``yaw_rad``, ``top_z_m``, ``resting``, ``destination``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from captain_ros.policy.expert.kit import State, base_xy, val
from captain_ros.policy.expert.source import in_session

Det = dict[str, Any]


@in_session
def rank(d: Det, prefer: str) -> float:
    """How well detection d fits a geometric preference (larger is better)."""
    e = d.get("extents_m") or [0, 0, 0]
    return {
        "longest": max(e[0], e[1]),
        "tallest": e[2],
        "widest": e[0] * e[1],
        "smallest": -e[0] * e[1] * e[2],
    }.get(prefer, 0.0)


@in_session
def find(
    S: State,
    text: str,
    handle: str | None = None,
    camera: str = "head",
    fallback: bool = False,
    prefer: str | None = None,
) -> Det | None:
    """Best detection for text in an observation (a fresh one when handle is None); with
    fallback=True, look through the wrist cameras when the head camera sees nothing."""
    if handle is None:
        o = S.robot.observe()
        handle = val(o, "handle")
        S.cams = val(o, "cameras", default=S.cams) or S.cams
    if fallback:
        for cam in [camera] + [c for c in S.cams if c != camera and "wrist" in c]:
            d = find(S, text, handle, cam, prefer=prefer)
            if d is not None:
                return d
        return None
    s = S.robot.segment(text, handle=handle, camera=camera)
    dets = val(s, "detections", default=[]) or []

    def plausible(d: Det) -> bool:  # task objects lie on the table in front of the robot
        c = np.asarray(d.get("centroid_m", [0, 0, 9]), dtype=float)
        near_base = min(
            np.linalg.norm(c[:2] - base_xy(S, a)) for a in (S.geom.get("arms") or {None: 0})
        )
        return bool(c[2] < 0.15 and near_base > 0.12)

    dets = [d for d in dets if plausible(d) and d.get("score", 0.0) >= 0.35]
    if not dets:
        return None
    if prefer:  # geometry decides among plausible matches (e.g. the widest "block")
        return max(dets, key=lambda d: (rank(d, prefer), d.get("score", 0.0)))
    return max(dets, key=lambda d: (round(d.get("score", 0.0), 2), d.get("area_px", 0)))


@in_session
def scan(
    S: State, texts: Iterable[str], handle: str | None, cams: list[str] | None = None
) -> list[Det]:
    """Every detection of every text in observation handle, in every camera (head first, then the
    wrist cameras; or just cams), text by text: the candidates to choose from by geometry."""
    cams = cams or ["head"] + [c for c in S.cams if "wrist" in c]
    return [
        d
        for text in texts
        for cam in cams
        for d in (
            val(S.robot.segment(text, handle=handle, camera=cam), "detections", default=[]) or []
        )
    ]


@in_session
def measure(S: State, det: Det | None, dest: Det | None = None) -> dict[str, Any] | None:
    """Geometry of detection det (against the destination detection dest), or None."""
    if det is None:
        return None
    m = S.robot.measure_object_geometry(det["id"], destination=dest["id"] if dest else None)
    return val(m)


@in_session
def relabel(S: State, d: Det | None, text: str) -> Det | None:
    """Detection d under my own name for it (mark_point at its pixel), so that my measurements say
    what they are about; d itself when the click grows a different region."""
    if d is None or text in str(d.get("label", "")):
        return d
    n = val(
        S.robot.mark_point(d["handle"], d["camera"], d["pixel_uv"][0], d["pixel_uv"][1], label=text)
    )
    if n and np.linalg.norm(np.subtract(n["centroid_m"], d["centroid_m"])) < 0.02:
        return n
    return d
