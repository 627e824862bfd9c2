"""Robot node (lifecycle): hosts the Backend and the guarded MotionService.

Publishes ``/joint_states``, ``/tf`` + ``/tf_static`` (REP 103/105: ``world`` -> ``<arm>_base_link``
static, ``world`` -> ``<arm>_tcp`` and ``<camera>_optical_frame``), ``/camera/<c>/image_raw``
(rgb8), ``/camera/<c>/depth/image_raw`` (32FC1, metres), ``/camera/<c>/camera_info`` and
``/captain/wrench/<arm>`` (magnitude of the external contact force [N] on the tool z axis; the
backends estimate a magnitude only). Serves the motion capabilities on ``/captain/robot/call``,
the e-stop (:mod:`captain_ros.ros.estop`) and, in simulation only, ``/captain/robot/snapshot``,
``/captain/robot/restore`` and ``/captain/robot/privileged_state``.

Lifecycle: ``configure`` builds the backend and the interfaces, ``activate`` starts publishing,
``deactivate`` stops publishing (e-stop stays served), ``cleanup``/``shutdown`` close the backend.
"""

from __future__ import annotations

from typing import Any

from captain_ros_interfaces.srv import LoadScene, PrivilegedState, Restore, Snapshot
from geometry_msgs.msg import WrenchStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.lifecycle import LifecycleNode, State, TransitionCallbackReturn
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage

from captain_ros.ros import convert
from captain_ros.ros.calls import ROBOT_CALL_SRV, CallServer
from captain_ros.ros.estop import LATCHED_QOS, EStopInterface
from captain_ros.ros.locked_backend import LockedBackend
from captain_ros.ros.params import Param, declare

KNOWN_BACKENDS = ("mujoco", "fake", "piper", "xr1", "humanoid")
PARAMS = (
    Param("backend", "mujoco", "Robot backend.", choices=KNOWN_BACKENDS),
    Param("task", "pick_place", "Task whose scene the simulator loads (simulation backends)."),
    Param("seed", 1000, "Scene seed of the task.", min_value=0),
    Param("joint_state_rate_hz", 30.0, "Rate of /joint_states, /tf and wrench [Hz] (applied at "
          "the next activate).", 1.0, 1000.0, read_only=False),
    Param("camera_rate_hz", 1.0, "Rate of camera images + CameraInfo [Hz]; 0 disables (applied at "
          "the next activate).", 0.0, 60.0, read_only=False),
    Param("cameras", "", "Comma-separated cameras to publish; empty = all."),
    Param("publish_depth", True, "Also publish 32FC1 depth images [m]."),
)


def implemented_backends() -> tuple[str, ...]:
    from captain_ros.backends import BACKENDS

    return tuple(BACKENDS)


def check_backend(values: dict[str, Any]) -> str | None:
    if values["backend"] not in implemented_backends():
        return (f"backend {values['backend']!r} is not implemented yet; implemented: "
                f"{', '.join(implemented_backends())}")
    return None


class RobotNode(LifecycleNode):
    """Lifecycle node hosting one backend. ``backend`` injects a ready backend (tests, composition)."""

    def __init__(self, backend: Any = None, **kwargs: Any) -> None:
        super().__init__("captain_robot", **kwargs)
        self.p = declare(self, PARAMS, None if backend is not None else check_backend)
        self._injected = backend
        self.backend: LockedBackend | None = None
        self.service: Any = None
        self._snapshots: dict[str, Any] = {}
        self._timers: list[Any] = []
        self.scene_listeners: list[Any] = []  # called after load_scene (e.g. perception reset)
        self.call_group = MutuallyExclusiveCallbackGroup()
        self.pub_group = MutuallyExclusiveCallbackGroup()

    # --- lifecycle ------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        from captain_ros.api.service import RobotService
        from captain_ros.backends import make_backend
        from captain_ros.motion import MotionService

        inner = self._injected or make_backend(self.p["backend"], task=self.p["task"],
                                               seed=self.p["seed"])
        self.scene = (self.p["task"], int(self.p["seed"]))
        try:
            self._initial = inner.snapshot()  # load_scene of the same scene restores it exactly
        except Exception:  # noqa: BLE001 - hardware: no snapshots
            self._initial = None
        self.backend = LockedBackend(inner)
        self.service = RobotService(self.backend, motion=MotionService(self.backend))
        self.calls_dispatch = lambda name, kw: self.service.call(name, kw)
        spec = self.backend.spec
        names = [c.strip() for c in self.p["cameras"].split(",") if c.strip()]
        self.cameras = tuple(names or spec.cameras)
        self.calls = CallServer(self, ROBOT_CALL_SRV, self.calls_dispatch, ("motion",), self.call_group)
        self.estop = EStopInterface(self, self.backend.estop, self.backend.reset_estop,
                                    lambda: self.backend.estopped)
        self.create_service(Snapshot, "/captain/robot/snapshot", self._on_snapshot,
                            callback_group=self.call_group)
        self.create_service(Restore, "/captain/robot/restore", self._on_restore,
                            callback_group=self.call_group)
        self.create_service(LoadScene, "/captain/robot/load_scene", self._on_load_scene,
                            callback_group=self.call_group)
        self.create_service(PrivilegedState, "/captain/robot/privileged_state",
                            self._on_privileged, callback_group=self.call_group)
        self.joint_pub = self.create_publisher(JointState, "/joint_states", 10)
        self.tf_pub = self.create_publisher(TFMessage, "/tf", 100)
        self.tf_static_pub = self.create_publisher(TFMessage, "/tf_static", LATCHED_QOS)
        self.wrench_pubs = {a: self.create_publisher(WrenchStamped, f"/captain/wrench/{a}", 10)
                            for a in spec.arm_names}
        self.image_pubs = {c: (self.create_publisher(Image, f"/camera/{c}/image_raw", 2),
                               self.create_publisher(Image, f"/camera/{c}/depth/image_raw", 2),
                               self.create_publisher(CameraInfo, f"/camera/{c}/camera_info", 2))
                           for c in self.cameras}
        stamp = self.get_clock().now().to_msg()
        self.tf_static_pub.publish(TFMessage(transforms=[
            convert.transform_msg("world", f"{a.name}_base_link", a.base_pose, stamp) for a in spec.arms]))
        self.get_logger().info(f"configured {self.p['backend']} backend, arms {spec.arm_names}, "
                               f"cameras {self.cameras}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        rate_hz = self.get_parameter("joint_state_rate_hz").value
        camera_hz = self.get_parameter("camera_rate_hz").value
        self._timers = [self.create_timer(1.0 / rate_hz, self.publish_state,
                                          callback_group=self.pub_group)]
        if camera_hz > 0:
            self._timers.append(self.create_timer(1.0 / camera_hz,
                                                  self.publish_cameras, callback_group=self.pub_group))
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        for t in self._timers:
            self.destroy_timer(t)
        self._timers = []
        return super().on_deactivate(state)

    def on_cleanup(self, state: State) -> TransitionCallbackReturn:
        self.close_backend()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        self.close_backend()
        return TransitionCallbackReturn.SUCCESS

    def close_backend(self) -> None:
        if self.backend is not None and self._injected is None:
            self.backend.close()
        self.backend = None

    # --- publishing -----------------------------------------------------------------------------
    def publish_state(self) -> None:
        b = self.backend
        if b is None:
            return
        stamp = self.get_clock().now().to_msg()
        with b.lock:  # one consistent sample between two control ticks
            arms = b.spec.arm_names
            joints = [b.joint_state(a) for a in arms]
            jaws = {f"{a}_jaw_opening_m": b.gripper(a).opening_m for a in arms}
            tcps = [convert.transform_msg("world", f"{a}_tcp", b.ee_pose(a), stamp) for a in arms]
            forces = {a: b.contact_force_n(a) for a in arms}
        self.joint_pub.publish(convert.joint_states_msg(joints, stamp, jaws))
        self.tf_pub.publish(TFMessage(transforms=tcps))
        for a, f in forces.items():
            w = WrenchStamped()
            w.header.stamp, w.header.frame_id = stamp, f"{a}_tcp"
            w.wrench.force.z = float(f)
            self.wrench_pubs[a].publish(w)

    def publish_cameras(self) -> None:
        from captain_ros.core.geometry import Pose

        if self.backend is None:
            return
        try:
            frames = self.backend.capture(list(self.cameras))
        except Exception as exc:  # noqa: BLE001 - a render failure must not kill the node
            self.get_logger().warning(f"camera capture failed: {exc}", throttle_duration_sec=10.0)
            return
        stamp = self.get_clock().now().to_msg()
        tfs = []
        for name, fr in frames.items():
            rgb_pub, depth_pub, info_pub = self.image_pubs[name]
            frame_id = convert.optical_frame(name)
            rgb_pub.publish(convert.image_msg(fr.rgb, stamp, frame_id))
            if self.p["publish_depth"]:
                depth_pub.publish(convert.image_msg(fr.depth_m, stamp, frame_id))
            info_pub.publish(convert.camera_info_msg(fr, stamp))
            tfs.append(convert.transform_msg("world", frame_id, Pose.from_matrix(fr.world_from_camera),
                                             stamp))
        self.tf_pub.publish(TFMessage(transforms=tfs))

    # --- simulation-only services ---------------------------------------------------------------
    def _on_snapshot(self, _req: Snapshot.Request, resp: Snapshot.Response) -> Snapshot.Response:
        try:
            snap = self.backend.snapshot()
        except Exception as exc:  # noqa: BLE001 - NotSupportedError on hardware
            resp.success, resp.message = False, str(exc)
            return resp
        sid = f"snap_{len(self._snapshots)}"
        self._snapshots[sid] = snap
        resp.success, resp.message, resp.snapshot_id = True, "stored", sid
        return resp

    def _on_restore(self, req: Restore.Request, resp: Restore.Response) -> Restore.Response:
        if req.snapshot_id not in self._snapshots:
            resp.success = False
            resp.message = f"unknown snapshot {req.snapshot_id!r}; known: {', '.join(self._snapshots)}"
            return resp
        try:
            self.backend.restore(self._snapshots[req.snapshot_id])
        except Exception as exc:  # noqa: BLE001
            resp.success, resp.message = False, str(exc)
            return resp
        resp.success, resp.message = True, "restored"
        return resp

    def _on_load_scene(self, req: LoadScene.Request, resp: LoadScene.Response) -> LoadScene.Response:
        from captain_ros.api.service import RobotService
        from captain_ros.backends import make_backend
        from captain_ros.motion import MotionService

        if (req.task, int(req.seed)) == self.scene and self._initial is not None:
            with self.backend.lock:
                self.backend.restore(self._initial)
                self.service = RobotService(self.backend, motion=MotionService(self.backend))
            for listener in self.scene_listeners:
                listener()
            resp.success, resp.message = True, "scene reset to its initial state"
            return resp
        if (req.task, int(req.seed)) == self.scene:
            resp.success, resp.message = True, "scene loaded (no snapshot to reset it on this backend)"
            return resp
        if self._injected is not None:
            resp.success = False
            resp.message = f"this robot node hosts a fixed backend with scene {self.scene}"
            return resp
        try:
            new = make_backend(self.p["backend"], task=req.task, seed=int(req.seed))
        except Exception as exc:  # noqa: BLE001 - unknown task, bad seed
            resp.success, resp.message = False, f"cannot load {req.task!r} seed {req.seed}: {exc}"
            return resp
        with self.backend.lock:
            self.backend.swap(new)
            self.service = RobotService(self.backend, motion=MotionService(self.backend))
            self.scene = (req.task, int(req.seed))
            self._initial = new.snapshot()
        for listener in self.scene_listeners:
            listener()
        resp.success, resp.message = True, f"loaded {req.task} seed {req.seed}"
        return resp

    def _on_privileged(self, _req: Any, resp: PrivilegedState.Response) -> PrivilegedState.Response:
        try:
            resp.state_json = convert.dumps(self.backend.privileged_state())
            resp.success, resp.message = True, ""
        except Exception as exc:  # noqa: BLE001
            resp.success, resp.message = False, str(exc)
        return resp


def main(argv: list[str] | None = None) -> None:
    """Run the robot node alone (no perception node: use ``robot_stack`` for both)."""
    from captain_ros.ros.runner import run_nodes

    run_nodes(argv, lambda: [RobotNode()])
