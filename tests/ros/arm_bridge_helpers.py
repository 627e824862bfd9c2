"""Helpers of the ROS arm bridge tests: the ros_arm config of the PiPER model for a test's
calibration folder and domain, and an in-process driver node on its own context (the ``driver``
fixture, registered in conftest.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from captain_ros.core.share import share_path

CONFIG = share_path("config", "ros_arm_piper.yaml")
FEEDBACK_AGE_S = 1.0
"""Stale-feedback limit of the tests: the config's 100 ms is for a real-time driver; Python
publishers on a shared 2-core test machine under load 6+ missed it (304-360 ms gaps seen), and
goal acceptance took over the config's 0.5 s: the tests allow 1 s and 2 s."""
GOAL_TIMEOUT_S = 2.0


def arm_config(calibration: Path, domain_id: int, **overrides: Any) -> Any:
    """``config/ros_arm_piper.yaml`` with the cameras' calibration in ``calibration``."""
    from captain_ros.backends.ros_arm.config import RosArmConfig

    d = yaml.safe_load(CONFIG.read_text())["ros_arm"]
    for cam in d["cameras"]:
        d["cameras"][cam]["calibration"] = str(calibration / f"{cam}.yaml")
    d["domain_id"] = domain_id
    d["safety"]["max_feedback_age_s"] = FEEDBACK_AGE_S
    d["goal_timeout_s"] = GOAL_TIMEOUT_S
    d.update(overrides)
    return RosArmConfig.from_dict(d, CONFIG.parent)


EPISODE_FEEDBACK_AGE_S = 3.0
EPISODE_GOAL_TIMEOUT_S = 10.0
"""The whole-episode test's limits: a loaded CI machine stalls the driver process for seconds at
a time (a 1 cm move took 3.5 s at load 8 and tripped the 1 s guard mid-episode); each guard has its
own test with the tight values."""


def write_config(
    path: Path,
    calibration: Path,
    domain_id: int,
    feedback_age_s: float = FEEDBACK_AGE_S,
    goal_timeout_s: float = GOAL_TIMEOUT_S,
) -> Path:
    d = yaml.safe_load(CONFIG.read_text())
    d["ros_arm"]["model"] = str(share_path("urdf", "piper.xml"))
    for cam in d["ros_arm"]["cameras"]:
        d["ros_arm"]["cameras"][cam]["calibration"] = str(calibration / f"{cam}.yaml")
    d["ros_arm"]["domain_id"] = domain_id
    d["ros_arm"]["safety"]["max_feedback_age_s"] = feedback_age_s
    d["ros_arm"]["goal_timeout_s"] = goal_timeout_s
    path.write_text(yaml.safe_dump(d))
    return path


class InProcessDriver:
    """The MuJoCo-backed driver node in this process (its own context on ``domain_id``), so a
    test can inject faults into its simulated arm; messages still go through DDS."""

    def __init__(self, domain_id: int, calibration: Path, **params: Any) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.parameter import Parameter

        from captain_ros.ros.arm_bridge.driver_node import ArmDriverNode

        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        over = {"calibration_dir": str(calibration), "image_size_px": 64, "camera_rate_hz": 2.0}
        over.update(params)
        self.node = ArmDriverNode(
            context=self.context,
            parameter_overrides=[Parameter(k, value=v) for k, v in over.items()],
        )
        self.driver = self.node.driver
        self.executor = MultiThreadedExecutor(num_threads=6, context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self._thread.join(timeout=5.0)
        self.node.destroy_node()
        self.context.try_shutdown()


@pytest.fixture
def driver(domain_id: int, tmp_path: Path):
    """The MuJoCo-backed driver in this process, calibration files in ``tmp_path/calib``."""
    d = InProcessDriver(domain_id, tmp_path / "calib")
    yield d
    d.close()
