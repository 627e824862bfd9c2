"""Where the package's ROS share files are: ``config/`` (parameter and rig files) and ``urdf/``
(the PiPER descriptions), the repository's top-level folders, installed to ``share/captain_ros/``.

:func:`share_path` looks in these roots, in order, and takes the first that holds the file:

1. the tree this code came from: ``<prefix>/share/captain_ros`` of the prefix the package is
   installed into (wheel, ``pip install --prefix``, colcon), or the repository's top level when
   it runs from a source checkout (the editable install of ``make setup``);
2. ``share/captain_ros`` of every prefix on ``AMENT_PREFIX_PATH`` (the ament index);
3. ``sys.prefix/share/captain_ros`` (a venv; ``scripts/ament_overlay.sh`` links the checkout's
   files there).

The code's own tree comes first so that code and data always come from one version. Paths inside
a rig configuration (models, camera calibrations): ``package://captain_ros/<path>`` names a file
of the share folder (as ROS has it); a relative path resolves against the folder of the config
file the user gave, or against the working directory when the config is a shipped one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from captain_ros.core.errors import InvalidArgumentError

PACKAGE = "captain_ros"
PACKAGE_URI = f"package://{PACKAGE}/"
"""Prefix of a path to a shipped file in a rig config (``package://captain_ros/urdf/piper.xml``)."""

_HERE = Path(__file__).resolve()


class ShareFileNotFound(InvalidArgumentError, FileNotFoundError):
    """A share file that none of the roots holds (the message lists where it looked)."""


def _own_root() -> Path | None:
    """The share root of the tree this module came from, or None."""
    package = _HERE.parents[1]  # .../captain_ros
    site = package.parent
    if site.name in ("site-packages", "dist-packages"):  # <prefix>/lib/pythonX.Y/site-packages
        prefix = site.parents[2] if site.parent.name.startswith("python") else site.parents[1]
        return prefix / "share" / PACKAGE
    checkout = package.parent  # a source checkout: package.xml beside the package folder
    if (checkout / "package.xml").is_file() and (checkout / "pyproject.toml").is_file():
        return checkout
    return None


def share_roots() -> list[Path]:
    """The folders :func:`share_path` searches, in order, without duplicates."""
    roots: list[Path] = []
    own = _own_root()
    if own is not None:
        roots.append(own)
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            roots.append(Path(prefix) / "share" / PACKAGE)
    roots.append(Path(sys.prefix) / "share" / PACKAGE)
    out: list[Path] = []
    for r in roots:
        if r not in out:
            out.append(r)
    return out


def share_path(*parts: str) -> Path:
    """Path of a shipped share file, e.g. ``share_path("config", "piper.yaml")``.

    Raises:
        ShareFileNotFound: no root holds it (the message names every root it tried).
    """
    roots = share_roots()
    for root in roots:
        p = root.joinpath(*parts)
        if p.exists():
            return p
    tried = ", ".join(str(r) for r in roots)
    raise ShareFileNotFound(f"{'/'.join(parts)} is not in any captain_ros share folder ({tried})")


def is_shipped(path: Path) -> bool:
    """Whether ``path`` is one of the shipped files (under a share root, links resolved)."""
    p = path.resolve()
    return any(p.is_relative_to(root.resolve()) for root in share_roots() if root.is_dir())


def config_base(config: Path) -> Path:
    """The folder the relative paths of rig config ``config`` resolve against: the file's own
    folder for a user's file; the working directory for a shipped one (``config/xr1.yaml`` named
    from any directory): the installed package holds no user file (calibrations, models), so a
    relative path there never silently points into it."""
    return Path.cwd() if is_shipped(config) else config.resolve().parent


def resolve_path(value: str | Path, base: Path) -> str:
    """A path from a rig config: ``package://captain_ros/...`` is the shipped share file, an
    absolute path stays, a relative one is taken from ``base`` (:func:`config_base`)."""
    s = str(value or "")
    if s.startswith(PACKAGE_URI):
        return str(share_path(*Path(s[len(PACKAGE_URI) :]).parts))
    if not s or Path(s).is_absolute():
        return s
    return str((base / s).resolve())


def config_file(path: str | Path) -> Path:
    """A rig/parameter file given by the user: ``path`` itself when it exists, else the shipped
    file of that name (so ``config/xr1.yaml`` or ``xr1.yaml`` works from any directory)."""
    p = Path(path)
    if p.is_file():
        return p
    try:
        return share_path("config", p.name)
    except ShareFileNotFound:
        return p
