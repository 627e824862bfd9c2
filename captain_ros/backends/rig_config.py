"""What every backend's configuration shares: strict keys and the contact-detection settings.

Used by the PiPER (``backends/piper/config.py``) and ROS 2 arm (``backends/ros_arm/config.py``)
configurations, so a typo is refused the same way everywhere and contact detection is tuned by
the same three numbers whichever signal the backend estimates the tool force from; the
simulators' options (``mujoco/config.py``, ``fake/config.py``, ``robosuite/config.py``) are read
through :class:`BackendOptions` with the same strict keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Self

import yaml

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.share import config_file


def check_keys(section: str, data: Any, cls: type) -> dict[str, Any]:
    """``data`` as a dict whose keys are fields of ``cls`` (else an error listing the valid ones)."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise InvalidArgumentError(f"{section} must be a mapping, got {type(data).__name__}")
    valid = [f.name for f in fields(cls)]
    unknown = sorted(str(k) for k in set(data) - set(valid))
    if unknown:
        raise InvalidArgumentError(
            f"unknown {section} key(s) {', '.join(unknown)}; valid: {', '.join(valid)}"
        )
    return dict(data)


def read_rig_file(path: str | Path, what: str) -> tuple[Path, Any]:
    """``(resolved path, parsed YAML)`` of a rig file (``what``: ``PiPER``, ``ros_arm``, for the
    messages); a missing file or invalid YAML is one :class:`InvalidArgumentError`."""
    p = config_file(path)
    if not p.is_file():
        raise InvalidArgumentError(f"{what} config {p} does not exist")
    try:
        return p, yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise InvalidArgumentError(f"{p}: not valid YAML ({exc})") from exc


class BackendOptions:
    """Base of a simulator's options dataclass (``mujoco/config.py``, ...): :meth:`from_options`
    for its ``make(scene, **options)``, and the image size check they share."""

    backend: ClassVar[str]

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Self:
        """``cls(**options)``; an unknown option is refused with the valid ones
        (``unknown mujoco option key(s) x; valid: ...``), not a ``TypeError``."""
        return cls(**check_keys(f"{cls.backend} option", options, cls))

    @staticmethod
    def check_image_size(size_px: object) -> None:
        if not (isinstance(size_px, int) and size_px > 0):
            raise InvalidArgumentError(f"image_size_px must be a positive integer, got {size_px!r}")


@dataclass(frozen=True)
class ContactConfig:
    """Contact detection on hardware: a tool-force estimate (PiPER: motor currents; a ROS 2 arm:
    ``/joint_states`` efforts minus the twin's gravity torque) and joint tracking error
    (calibration: docs/hardware.md).

    Attributes:
        force_noise_n: Free-space noise of the tool-force estimate [N]; the estimate minus this
            is what the guard compares against its threshold (measured on the emulator:
            benchmarks/RESULTS.md; re-measure on each arm with ``captain hw calibrate``).
        tracking_error_rad: A joint lagging its commanded target by more than this while the
            command is still is a contact [rad].
        filter_alpha: Weight of the newest sample in the force low-pass filter (0, 1].
    """

    force_noise_n: float = 1.5
    tracking_error_rad: float = 0.05
    filter_alpha: float = 0.5

    def __post_init__(self) -> None:
        if not (
            self.force_noise_n >= 0 and self.tracking_error_rad > 0 and 0 < self.filter_alpha <= 1
        ):
            raise InvalidArgumentError(
                "contact: force_noise_n >= 0, tracking_error_rad > 0, 0 < filter_alpha <= 1"
            )
