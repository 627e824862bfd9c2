"""Configuration of a PiPER rig over CAN (``config/piper.yaml``, ``config/piper_dual.yaml``).

Every key is validated; an unknown key is an error that lists the valid ones (a typo never
silently falls back to a default). Units are SI unless the name says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.backends.rig_config import ContactConfig, check_keys, read_rig_file
from captain_ros.backends.safety import SafetyConfig
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.share import config_base, resolve_path

RIG_ARMS = {"piper": ("arm",), "piper_dual": ("left", "right")}
BUSTYPES = ("socketcan", "virtual", "slcan", "pcan", "kvaser")


@dataclass(frozen=True)
class CameraConfig:
    """One RGB-D camera.

    Attributes:
        source: ``realsense`` (pyrealsense2) or ``emulator`` (rendered by the CAN emulator).
        serial: RealSense serial number (``""``: the first device found).
        width_px / height_px / fps: Stream settings.
        calibration: YAML file with ``world_from_optical`` (head) or ``flange_from_optical``
            (wrist, hand-eye) as a 4x4 row-major list; ``""``: from the emulator.
        mount: ``world`` (fixed) or the arm name whose flange carries the camera.
    """

    source: str = "realsense"
    serial: str = ""
    width_px: int = 640
    height_px: int = 480
    fps: int = 30
    calibration: str = ""
    mount: str = "world"

    def __post_init__(self) -> None:
        if self.source not in ("realsense", "emulator"):
            raise InvalidArgumentError(f"camera source {self.source!r}; valid: realsense, emulator")


@dataclass(frozen=True)
class PiperConfig:
    """A PiPER rig.

    Attributes:
        rig: ``piper`` (one arm, ``arm``) or ``piper_dual`` (``left``/``right``).
        can: Arm -> CAN interface (``can0``; ``can0``/``can1`` for the dual rig).
        bustype: python-can interface (``socketcan`` on hardware, ``virtual`` for the emulator).
        speed_rate_pct: MOVE J speed rate of ``MotionCtrl_2`` [%] (the arm's own velocity cap).
        crash_protection_level: ``CrashProtectionConfig`` level of every joint (0 = off, 1-8).
        gripper_effort_nm: Gripper effort of ``GripperCtrl`` [N m] (0-5).
        gripper_n_per_nm: Finger force per N m of gripper effort [N/(N m)] (calibrate).
        holding_effort_nm: Gripper effort above which a stalled jaw is holding [N m].
        enable_timeout_s: How long ``enable`` waits for every motor to report enabled [s].
        feedback_timeout_s: How long connecting waits for the first feedback [s].
        contact: Contact detection thresholds.
        cameras: Camera name -> settings (``head``, ``wrist`` / ``left_wrist``, ``right_wrist``).
        safety: The safety layer's limits.
    """

    rig: str = "piper"
    can: dict[str, str] = field(default_factory=lambda: {"arm": "can0"})
    bustype: str = "socketcan"
    speed_rate_pct: int = 100
    crash_protection_level: int = 0
    gripper_effort_nm: float = 3.0
    gripper_n_per_nm: float = 4.0
    holding_effort_nm: float = 0.5
    enable_timeout_s: float = 2.0
    feedback_timeout_s: float = 1.0
    contact: ContactConfig = field(default_factory=ContactConfig)
    cameras: dict[str, CameraConfig] = field(default_factory=dict)
    safety: SafetyConfig = field(default_factory=lambda: _hardware_safety())

    def __post_init__(self) -> None:
        if self.rig not in RIG_ARMS:
            raise InvalidArgumentError(f"rig {self.rig!r}; valid: {', '.join(RIG_ARMS)}")
        if set(self.can) != set(RIG_ARMS[self.rig]):
            raise InvalidArgumentError(
                f"can must map the arms {RIG_ARMS[self.rig]} of rig "
                f"{self.rig!r} to interfaces, got {dict(self.can)}"
            )
        if self.bustype not in BUSTYPES:
            raise InvalidArgumentError(f"bustype {self.bustype!r}; valid: {', '.join(BUSTYPES)}")
        if not 1 <= int(self.speed_rate_pct) <= 100:
            raise InvalidArgumentError("speed_rate_pct must be in 1..100")
        if not 0 <= int(self.crash_protection_level) <= 8:
            raise InvalidArgumentError("crash_protection_level must be in 0..8")
        if not 0 < self.gripper_effort_nm <= 5:
            raise InvalidArgumentError("gripper_effort_nm must be in (0, 5]")
        for c in self.cameras.values():
            if c.mount != "world" and c.mount not in RIG_ARMS[self.rig]:
                raise InvalidArgumentError(
                    f"camera mount {c.mount!r}; valid: world, {', '.join(RIG_ARMS[self.rig])}"
                )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PiperConfig:
        data = dict(data)
        check_keys("piper", data, cls)
        contact = dict(data.pop("contact", None) or {})
        check_keys("piper.contact", contact, ContactConfig)
        cams = {}
        for name, c in dict(data.pop("cameras", None) or {}).items():
            check_keys(f"piper.cameras.{name}", c or {}, CameraConfig)
            cams[str(name)] = CameraConfig(**(c or {}))
        safety = (
            SafetyConfig.from_dict(data.pop("safety", None))
            if "safety" in data
            else HARDWARE_SAFETY
        )
        return cls(contact=ContactConfig(**contact), cameras=cams, safety=safety, **data)

    @classmethod
    def load(cls, path: str | Path) -> PiperConfig:
        """Read ``path`` (its top-level ``piper:`` section, or the whole file)."""
        p, raw = read_rig_file(path, "PiPER")
        if not isinstance(raw, dict):
            raise InvalidArgumentError(f"{p}: expected a mapping")
        section = dict(raw.get("piper", raw))
        for cam in (
            section.get("cameras") or {}
        ).values():  # see captain_ros.core.share.config_base
            if isinstance(cam, dict) and cam.get("calibration"):
                cam["calibration"] = resolve_path(cam["calibration"], config_base(p))
        return cls.from_dict(section)


HARDWARE_SAFETY = SafetyConfig(
    workspace_margin_m=0.0,
    velocity_scale=1.0,
    max_accel_rad_s2=5.0,
    max_contact_force_n=60.0,
    max_effort_nm=8.0,
    watchdog_s=0.2,
    max_feedback_age_s=0.1,
    twin_tolerance_m=0.005,
    twin_tolerance_rad=0.02,
)
"""Hardware defaults: every guard on (see docs/hardware.md for where each number comes from)."""


def _hardware_safety() -> SafetyConfig:
    return HARDWARE_SAFETY


__all__ = ["HARDWARE_SAFETY", "CameraConfig", "ContactConfig", "PiperConfig"]
