"""Parse pointing output of VLMs into pixel coordinates, robust to junk around and inside it.

Understood formats (first match wins per span, all spans collected in order):

* Molmo: ``<point x="61.5" y="40.4" alt="cup">cup</point>`` and
  ``<points x1="10" y1="20" x2="30" y2="40" alt="cups">cups</points>`` (percent of the image);
* Molmo2-style ``coords="..."`` attributes: ``"x y"`` pairs, optionally prefixed by an index
  (``"1 523 412 2 600 410"``) or separated by ``;`` (per-mille of the image);
* JSON-ish ``"point_2d": [x, y]`` / ``"point": [x, y]`` (pixels, Qwen-VL style);
* bare tuples ``(x, y)`` in the free text (pixels, or fractions when both are <= 1).

``coords`` chooses the unit for the XML formats: ``"auto"`` (percent, unless a value exceeds 100:
pixels), ``"percent"``, ``"permille"``, ``"pixels"`` or ``"fraction"``.
Points outside the image or non-finite are dropped; at most ``max_points`` are returned.
"""

from __future__ import annotations

import math
import re

from captain_ros.perception.segmenter import PointCandidate

_NUM = r"[-+]?\d+(?:\.\d+)?"
_POINT = re.compile(r"<point\b([^>]*)>(.*?)(?:</point>|$)", re.S | re.I)
_POINTS = re.compile(r"<points\b([^>]*)>(.*?)(?:</points>|$)", re.S | re.I)
_KV = re.compile(r"([a-zA-Z_]+)(\d*)\s*=\s*[\"']([^\"']*)[\"']")
_JSON = re.compile(
    r"[\"'](?:point_2d|point|points_2d)[\"']\s*:\s*\[\s*(" + _NUM + r")\s*,\s*(" + _NUM + r")\s*\]"
)
_TUPLE = re.compile(r"\(\s*(" + _NUM + r")\s*,\s*(" + _NUM + r")\s*\)")
_LABEL = re.compile(r"[\"']label[\"']\s*:\s*[\"']([^\"']*)[\"']")


def _scale(x: float, y: float, unit: str, width: int, height: int) -> tuple[float, float]:
    if unit == "percent":
        return x / 100 * width, y / 100 * height
    if unit == "permille":
        return x / 1000 * width, y / 1000 * height
    if unit == "fraction":
        return x * width, y * height
    return x, y


def _floats(text: str) -> list[float]:
    out = []
    for tok in re.findall(_NUM, text):
        try:
            out.append(float(tok))
        except ValueError:
            continue
    return out


def _coords_pairs(text: str) -> list[tuple[float, float]]:
    groups = [g for g in re.split(r"[;|]", text) if g.strip()]
    if len(groups) > 1:
        return [(v[-2], v[-1]) for v in (_floats(g) for g in groups) if len(v) >= 2]
    vals = _floats(text)
    if (
        len(vals) % 3 == 0
        and len(vals) >= 3
        and all(
            float(vals[i]).is_integer() and vals[i] == i // 3 + 1 for i in range(0, len(vals), 3)
        )
    ):
        return [(vals[i + 1], vals[i + 2]) for i in range(0, len(vals), 3)]
    return [(vals[i], vals[i + 1]) for i in range(0, len(vals) - 1, 2)]


def parse_points(
    text: str,
    width: int,
    height: int,
    coords: str = "auto",
    default_label: str = "",
    max_points: int = 32,
) -> list[PointCandidate]:
    """Pixel points ``(u, v)`` in an image of ``width`` x ``height`` from VLM output ``text``."""
    if not isinstance(text, str):
        return []
    raw: list[tuple[float, float, str, str]] = []  # x, y, label, unit-hint
    for tag, rx in (("point", _POINT), ("points", _POINTS)):
        for m in rx.finditer(text):
            attrs: dict[str, str] = {}
            for k, idx, val in _KV.findall(m.group(1)):
                attrs[k.lower() + idx] = val
            label = attrs.get("alt") or re.sub(r"<[^>]*>", "", m.group(2)).strip() or default_label
            if "coords" in attrs:
                raw += [(x, y, label, "permille") for x, y in _coords_pairs(attrs["coords"])]
                continue
            keys = sorted({k[1:] for k in attrs if k.startswith("x") and k[1:].isdigit()}, key=int)
            if tag == "point" or not keys:
                keys = [""]
            for i in keys:
                try:
                    raw.append((float(attrs["x" + i]), float(attrs["y" + i]), label, "xml"))
                except (KeyError, ValueError):
                    continue
    if not raw:
        labels = _LABEL.findall(text)
        for k, m in enumerate(_JSON.finditer(text)):
            raw.append(
                (
                    float(m.group(1)),
                    float(m.group(2)),
                    labels[k] if k < len(labels) else default_label,
                    "pixels",
                )
            )
    if not raw:
        for m in _TUPLE.finditer(text):
            x, y = float(m.group(1)), float(m.group(2))
            raw.append((x, y, default_label, "fraction" if max(x, y) <= 1 else "pixels"))
    xml_vals = [v for x, y, _, h in raw if h == "xml" for v in (x, y)]
    xml_unit = (
        coords
        if coords != "auto"
        else ("pixels" if xml_vals and max(xml_vals) > 100 else "percent")
    )
    out: list[PointCandidate] = []
    for x, y, label, hint in raw:
        unit = xml_unit if hint == "xml" else (coords if coords != "auto" else hint)
        u, v = _scale(x, y, unit, width, height)
        if not (math.isfinite(u) and math.isfinite(v)) or not (0 <= u < width and 0 <= v < height):
            continue
        out.append(PointCandidate(u, v, label))
        if len(out) >= max_points:
            break
    return out
