"""An emulated PiPER rig that answers piper_sdk's CAN frames (python-can virtual bus)."""

from captain_ros.backends.piper_emulator.device import ArmDevice
from captain_ros.backends.piper_emulator.emulator import PiperEmulator

__all__ = ["ArmDevice", "PiperEmulator"]
