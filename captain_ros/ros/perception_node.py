"""Perception node: the observation cache and the perception/measurement/state calls.

Hosts a :class:`~captain_ros.perception.PerceptionService` over the robot node's backend and
serves the capabilities of the registry's ``perception`` group on ``/captain/perception/call``,
the RGB image of a cached observation on ``/captain/perception/image`` (the policy's
``image(handle, camera)``), and publishes each observation on ``/captain/observations`` (and its
frames on ``/camera/<c>/image_raw``, ``depth/image_raw``, ``camera_info``: operators and bags see
exactly the images the policy's calls used, at no extra rendering cost) and each detection list on
``/captain/detections``.

The perception service reads the cameras and the robot state directly from the backend (a
renderer in simulation, the camera drivers on hardware), so this node runs in the same process as
the robot node (:mod:`captain_ros.ros.robot_stack`), sharing its locked backend: images never
cross a process boundary before they are needed.
"""

from __future__ import annotations

from typing import Any

from captain_ros_interfaces.msg import Detections, ObservationHandle
from captain_ros_interfaces.srv import ObservationImage
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from captain_ros.core.result import Result
from captain_ros.evaluation.config import EpisodeConfig
from captain_ros.evaluation.episode import robot_service
from captain_ros.perception.models import POINTERS, SEGMENTERS, PerceptionModels
from captain_ros.ros import convert
from captain_ros.ros.calls import IMAGE_SRV, PERCEPTION_CALL_SRV, CallServer
from captain_ros.ros.params import Param, declare
from captain_ros.ros.publish_log import PublishLog
from captain_ros.ros.state_publisher import CameraPublisher

PARAMS = (
    Param(
        "segmenter",
        "default",
        "Segmentation: 'default' (weight-free colour/depth, the "
        "simulator's) or 'sam' (SAM checkpoint folder sam_folder).",
        choices=SEGMENTERS,
    ),
    Param("sam_folder", "", "Local SAM checkpoint folder (segmenter sam)."),
    Param(
        "pointer",
        "default",
        "Text -> points: 'default' (weight-free), 'vlm_local' (folder "
        "vlm_folder) or 'vlm_endpoint' (OpenAI-compatible vlm_url + vlm_model, Molmo-style).",
        choices=POINTERS,
    ),
    Param("vlm_folder", "", "Local image-text-to-text model folder (pointer vlm_local)."),
    Param("vlm_url", "", "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1."),
    Param("vlm_model", "", "Served pointing model name (pointer vlm_endpoint)."),
    Param("vlm_api_key_env", "CAPTAIN_VLM_API_KEY", "Environment variable holding the key."),
    Param(
        "vlm_coords",
        "auto",
        "Unit of the pointer's XML coordinates.",
        choices=("auto", "percent", "permille", "pixels", "fraction"),
    ),
    Param("model_device", "cpu", "torch device of local models."),
    Param("publish_observations", True, "Publish every observation's frames on /camera/<c>/*."),
    Param("publish_depth", True, "Include 32FC1 depth [m] with published observation frames."),
)


def models_of(values: dict[str, Any]) -> PerceptionModels:
    """The model selection of the node parameters (validated), as every front end's episode has
    it (:meth:`~captain_ros.evaluation.config.EpisodeConfig.from_ros_parameters`)."""
    return EpisodeConfig.from_ros_parameters(values).perception


def models_problem(values: dict[str, Any]) -> str | None:
    try:
        models_of(values)
    except Exception as exc:  # noqa: BLE001 - reported as a parameter error
        return str(exc)
    return None


class PerceptionNode(Node):
    """Serves perception calls over ``backend`` (the robot node's locked backend)."""

    def __init__(self, backend: Any, **kwargs: Any) -> None:
        super().__init__("captain_perception", **kwargs)
        self.p = declare(self, PARAMS, models_problem)
        self.backend = backend
        self.models = models_of(self.p)
        self._segmenter, self._pointer = self.models.build()
        self.reset()
        group = MutuallyExclusiveCallbackGroup()
        self.calls = CallServer(self, PERCEPTION_CALL_SRV, self._call, ("perception",), group)
        self.create_service(ObservationImage, IMAGE_SRV, self._on_image, callback_group=group)
        self.publish_log = PublishLog(self)
        self.obs_pub = self.publish_log.publisher(ObservationHandle, "/captain/observations", 100)
        self.det_pub = self.publish_log.publisher(Detections, "/captain/detections", 100)
        self.camera_pub = CameraPublisher(self, tuple(backend.spec.cameras))

    def reset(self) -> None:
        """Fresh observation cache (after the robot node loaded a new scene); the models are
        built once, in ``__init__``."""
        from captain_ros.perception.service import PerceptionService

        self.perception = PerceptionService(
            self.backend, segmenter=self._segmenter, pointer=self._pointer
        )
        self.service = robot_service(self.backend, motion=False, perception=self.perception)

    def _call(self, name: str, kwargs: dict[str, Any]) -> Result:
        result = self.service.call(name, kwargs)
        value = result.value if isinstance(result.value, dict) else {}
        stamp = self.get_clock().now().to_msg()
        if result.success and name == "observe" and "handle" in value:
            self.obs_pub.publish(
                ObservationHandle(
                    stamp=stamp,
                    handle=str(value["handle"]),
                    cameras=[str(c) for c in value.get("cameras", [])],
                    stamp_s=float(value.get("stamp_s") or 0.0),
                )
            )
            if self.p["publish_observations"]:
                obs = self.perception.observations.get(str(value["handle"]))
                self.camera_pub.publish_frames(obs.frames, self.p["publish_depth"])
        dets = value.get("detections") if result.success else None
        if isinstance(dets, list):
            msg = Detections(
                prompt=str(kwargs.get("text", "")),
                detections=[convert.detection_to_msg(d) for d in dets if isinstance(d, dict)],
            )
            msg.header.stamp, msg.header.frame_id = stamp, "world"
            self.det_pub.publish(msg)
        return result

    def _on_image(
        self, req: ObservationImage.Request, resp: ObservationImage.Response
    ) -> ObservationImage.Response:
        img = self.service.image(req.handle, req.camera)
        resp.found = img is not None
        if img is not None:
            resp.image = convert.image_msg(
                img, self.get_clock().now().to_msg(), convert.optical_frame(req.camera)
            )
        return resp


def main(argv: list[str] | None = None) -> int:
    """Run the perception node. It serves the robot node's locked backend, so it runs in the
    robot's process: ``python -m captain_ros.ros.perception_node`` is the robot stack
    (:mod:`captain_ros.ros.robot_stack`, robot node + this node, one executor)."""
    from captain_ros.ros.robot_stack import main as robot_stack_main

    return robot_stack_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
