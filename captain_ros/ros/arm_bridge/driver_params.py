"""The simulated arm driver node's parameters, its controllers' names and the arm it simulates
(:mod:`captain_ros.ros.arm_bridge.driver_node`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from captain_ros.ros.params import Param

if TYPE_CHECKING:
    from captain_ros.backends.ros_arm.simulated import SimulatedArmDriver

PARAMS = (
    Param("task", "pick_place", "Task whose scene the simulated world holds."),
    Param("seed", 3, "Scene seed.", min_value=0),
    Param("image_size_px", 256, "Camera resolution [px].", 16, 1024),
    Param("joint_state_rate_hz", 100.0, "Rate of /joint_states [Hz].", 1.0, 1000.0),
    Param("camera_rate_hz", 5.0, "Rate of the camera topics [Hz]; 0: no cameras.", 0.0, 30.0),
    Param("calibration_dir", "", "Write the cameras' calibration files here at start ('': no)."),
    Param(
        "ground_truth_service",
        "/arm_driver/privileged_state",
        "Simulation-only ground-truth service ('': none).",
    ),
)


def controller_prefix(arm: str) -> str:
    """The prefix of an arm's controllers: none for the single arm (``/arm_controller/...``),
    ``<arm>_`` on the dual rig (``/left_arm_controller/...``)."""
    return "" if arm == "arm" else f"{arm}_"


def simulated_driver(values: dict[str, Any]) -> SimulatedArmDriver:
    """The MuJoCo arm of the node parameters: the task's scene for the seed, at the image size."""
    from captain_ros.backends.ros_arm.simulated import SimulatedArmDriver
    from captain_ros.tasks import get_task

    return SimulatedArmDriver(
        get_task(values["task"]).sample(int(values["seed"])),
        image_size_px=int(values["image_size_px"]),
    )
