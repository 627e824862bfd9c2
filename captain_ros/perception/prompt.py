"""Text prompts for the weight-free segmenter: colour words and shape words.

A prompt such as ``"red cube"``, ``"the blue block"``, ``"plate"`` or ``"peg"`` is split into a
colour (matched in HSV against the region's median colour) and a shape class (matched against the
fitted gravity-aligned geometry). Unknown words are ignored; a prompt with neither a colour nor a
shape word matches every object-sized region with a low score.
"""

from __future__ import annotations

import colorsys
import re
from dataclasses import dataclass

import numpy as np

from captain_ros.perception.fitting import ObjectGeometry

# name -> (hue in [0,1) or None for achromatic, min saturation, value range)
COLOURS: dict[str, tuple[float | None, float, tuple[float, float]]] = {
    "red": (0.0, 0.35, (0.15, 1.0)),
    "orange": (0.081, 0.4, (0.3, 1.0)),
    "yellow": (0.148, 0.35, (0.3, 1.0)),
    "green": (0.348, 0.25, (0.1, 1.0)),
    "cyan": (0.49, 0.3, (0.2, 1.0)),
    "blue": (0.635, 0.3, (0.1, 1.0)),
    "purple": (0.78, 0.25, (0.1, 1.0)),
    "magenta": (0.907, 0.3, (0.2, 1.0)),
    "pink": (0.95, 0.2, (0.45, 1.0)),
    "brown": (0.07, 0.3, (0.1, 0.5)),
    "white": (None, 0.0, (0.7, 1.0)),
    "gray": (None, 0.0, (0.2, 0.75)),
    "black": (None, 0.0, (0.0, 0.22)),
}
SYNONYMS = {
    "grey": "gray",
    "violet": "purple",
    "sky": "cyan",
    "teal": "cyan",
    "navy": "blue",
    "silver": "gray",
    "dark": "",
    "light": "",
}

# shape class -> words
SHAPES: dict[str, tuple[str, ...]] = {
    "cube": ("cube", "cubes", "block", "blocks", "brick", "box", "boxes", "dice"),
    "flat": ("plate", "plates", "dish", "coaster", "disc", "disk", "pad", "mat", "lid"),
    "cylinder": (
        "cylinder",
        "can",
        "cup",
        "mug",
        "bottle",
        "jar",
        "peg",
        "pegs",
        "post",
        "rod",
        "pole",
        "pin",
        "bowl",
        "ramekin",
    ),
    "container": ("tray", "container", "bin", "basket", "crate", "target", "goal", "zone"),
    "handle": ("handle", "knob", "grip"),
    "ball": ("ball", "sphere"),
    "large": ("drawer", "cabinet", "shelf", "door", "table"),
}


@dataclass(frozen=True)
class Prompt:
    """A parsed text prompt: colour name (or ``None``), shape class (or ``None``), raw text."""

    text: str
    colour: str | None
    shape: str | None
    dark: bool = False
    light: bool = False


def parse_prompt(text: str) -> Prompt:
    """Find the first colour word and the last shape word in ``text``."""
    words = re.findall(r"[a-z]+", str(text).lower())
    colour = shape = None
    for w in words:
        w2 = SYNONYMS.get(w, w)
        if colour is None and w2 in COLOURS:
            colour = w2
        for cls, names in SHAPES.items():
            if w in names:
                shape = cls
    return Prompt(str(text), colour, shape, "dark" in words, "light" in words)


def hsv_of(rgb: np.ndarray) -> tuple[float, float, float]:
    r, g, b = (float(x) / 255.0 for x in rgb[:3])
    return colorsys.rgb_to_hsv(r, g, b)


def colour_score(rgb: np.ndarray, name: str) -> float:
    """How well a region colour (RGB uint8) matches a colour name, in [0, 1]."""
    h, s, v = hsv_of(rgb)
    hue, min_sat, (vlo, vhi) = COLOURS[name]
    vfit = 1.0 if vlo <= v <= vhi else max(0.0, 1.0 - 4 * min(abs(v - vlo), abs(v - vhi)))
    if hue is None:
        return float(max(0.0, 1.0 - max(s - 0.18, 0.0) * 4) * vfit)
    if s < min_sat * 0.6:
        return 0.0
    dh = min(abs(h - hue), 1 - abs(h - hue))
    return float(max(0.0, 1.0 - dh / 0.06) * min(1.0, s / max(min_sat, 1e-3)) * vfit)


def colour_name(rgb: np.ndarray) -> str:
    """Best colour word for an RGB colour."""
    return max(COLOURS, key=lambda n: colour_score(rgb, n))


def shape_score(geom: ObjectGeometry, cls: str) -> float:
    """How well a fitted geometry matches a shape class, in [0, 1]."""
    dx, dy, dz = (float(x) for x in geom.extents_m)
    big, small = max(dx, dy), max(min(dx, dy), 1e-4)
    if cls == "cube":
        ok = small >= 0.01 and big <= 0.15 and geom.shape == "box"
        return (1.0 if ok else 0.4) * (1.0 if dz >= 0.3 * small else 0.5)
    if cls == "flat":
        return 1.0 if dz < 0.35 * small and big > 0.04 else 0.3
    if cls == "cylinder":
        return 1.0 if geom.shape == "cylinder" else 0.5
    if cls == "container":
        return 1.0 if big > 0.08 else 0.4
    if cls == "handle":
        return 1.0 if big < 0.15 and (big > 2.0 * small or dz > 2 * small) else 0.5
    if cls == "ball":
        return 1.0 if geom.shape == "cylinder" and abs(dz - big) < 0.3 * big else 0.4
    if cls == "large":
        return 1.0 if big > 0.1 or dz > 0.1 else 0.4
    return 0.5


def describe(rgb: np.ndarray, geom: ObjectGeometry) -> str:
    """Short label for a region, e.g. ``"red box"``."""
    return f"{colour_name(rgb)} {geom.shape}"
