"""Helpers for completion gates over the agent's own ``measure_object_geometry`` records.

A record is the ``value`` of a successful ``measure_object_geometry`` call (docs/contracts.md):
``{"object_id", "center_m", "extents_m", "yaw_rad", "shape", "radius_m", "footprint_m", "top_z_m",
"resting", "destination": {"id", "center_m", "top_z_m", "offset_xy_m", "distance_xy_m"} | None}``.

Which object a record is about is recognised from its text: the words of ``object_id`` and of any
``label``/``object_label``/``text``/``query`` field the harness or perception layer attached (the
detection label, e.g. ``"red cube"``); for the destination, its ``id`` and ``label``. A gate
never reads the simulator: it judges only what the agent measured, with the tolerances of TASK.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

Record = Mapping[str, Any]

_OBJECT_TEXT_KEYS = ("object_id", "label", "object_label", "text", "query", "object")
_DEST_TEXT_KEYS = ("id", "label", "text", "query")


def _text(rec: Mapping[str, Any] | None, keys: Sequence[str]) -> str:
    if not isinstance(rec, Mapping):
        return ""
    return " ".join(str(rec[k]) for k in keys if isinstance(rec.get(k), str | int)).lower()


def object_text(rec: Record) -> str:
    """Lower-case text naming the measured object."""
    return _text(rec, _OBJECT_TEXT_KEYS)


def destination_text(rec: Record) -> str:
    """Lower-case text naming the record's destination ('' when none)."""
    return _text(rec.get("destination"), _DEST_TEXT_KEYS)


def mentions(text: str, words: Sequence[Sequence[str]]) -> bool:
    """Every group in ``words`` has at least one of its alternatives in ``text``."""
    return all(any(w in text for w in group) for group in words)


def anonymous(text: str) -> bool:
    """``text`` names nothing but ids such as ``det_12`` (e.g. a ``mark_point`` without a label)."""
    return not re.sub(r"\b(det|obj|id)_?\d+\b|none", " ", text).strip()


def matches(text: str, words: Sequence[Sequence[str]]) -> bool:
    """``text`` mentions ``words``, or is anonymous (could be any object)."""
    return anonymous(text) or mentions(text, words)


def latest(
    measurements: Sequence[Record],
    obj: Sequence[Sequence[str]],
    dest: Sequence[Sequence[str]] | None = None,
) -> Record | None:
    """The last record about ``obj`` (word groups) with a destination matching ``dest`` (if given).

    Records whose object (or destination) carries no words, only a detection id, match any name:
    the gate cannot tell which object an unlabelled detection was, and host success judges anyway.
    """
    for rec in reversed(list(measurements)):
        if not isinstance(rec, Mapping) or not matches(object_text(rec), obj):
            continue
        if dest is not None and (
            not isinstance(rec.get("destination"), Mapping)
            or not matches(destination_text(rec), dest)
        ):
            continue
        return rec
    return None


def first(measurements: Sequence[Record], obj: Sequence[Sequence[str]]) -> Record | None:
    """The first record about ``obj``."""
    for rec in measurements:
        if isinstance(rec, Mapping) and matches(object_text(rec), obj):
            return rec
    return None


def bottom_z_m(rec: Record) -> float:
    """Bottom of the measured object: ``top_z_m - extents_m[2]`` [m]."""
    return float(rec["top_z_m"]) - float(rec["extents_m"][2])


def check_on_top(
    measurements: Sequence[Record],
    obj: Sequence[Sequence[str]],
    obj_name: str,
    dest: Sequence[Sequence[str]],
    dest_name: str,
    tol_xy_m: float,
    tol_z_m: float,
    need_resting: bool = True,
) -> tuple[bool, str]:
    """Gate: the latest measurement of ``obj`` against ``dest`` shows it resting on top, centred.

    Passes when that record has ``destination.distance_xy_m <= tol_xy_m``, ``resting`` true, and
    the object's bottom (``top_z_m - extents_m[2]``) within ``tol_z_m`` of the destination's
    ``top_z_m``. Returns ``(ok, reason)`` where the reason says what is missing.
    """
    rec = latest(measurements, obj, dest)
    if rec is None:
        return False, (
            f"no measurement of the {obj_name} with destination={dest_name}: call "
            f"measure_object_geometry(<{obj_name}>, destination=<{dest_name}>) on a fresh "
            "observation after placing it"
        )
    d = rec["destination"]
    dist = float(d.get("distance_xy_m", float("inf")))
    if dist > tol_xy_m:
        return False, (
            f"the {obj_name} is {dist * 100:.1f} cm from the centre of the {dest_name} "
            f"(tolerance {tol_xy_m * 100:.1f} cm)"
        )
    if need_resting and not rec.get("resting", False):
        return (
            False,
            f"the latest measurement says the {obj_name} is not resting (still held or moving)",
        )
    gap = bottom_z_m(rec) - float(d["top_z_m"])
    if abs(gap) > tol_z_m:
        return False, (
            f"the {obj_name}'s bottom is {gap * 100:+.1f} cm from the top of the {dest_name} "
            f"(tolerance {tol_z_m * 100:.1f} cm): it is not sitting on it"
        )
    return True, f"the {obj_name} rests on the {dest_name} ({dist * 100:.1f} cm from its centre)"
