"""Robot node (lifecycle): hosts the Backend and the guarded MotionService.

Serves the motion capabilities on ``/captain/robot/call`` (``RobotCall``), the e-stop
(:mod:`captain_ros.ros.estop`: ``/captain/estop`` topic, trigger/reset services, latched state),
the simulation-only services of :mod:`captain_ros.ros.sim_services`, and publishes the state
topics of :mod:`captain_ros.ros.state_publisher` (``/joint_states``, ``/tf``, ``/tf_static``,
``/camera/<c>/...``, ``/captain/wrench/<arm>``). Robot calls are served only for the episode
named by the ``active_episode`` parameter (the policy node sets it per goal;
:mod:`captain_ros.ros.episode_gate`); the gate closes by itself when the policy process dies
(:mod:`captain_ros.ros.liveness`). The backend and its scene live in
:mod:`captain_ros.ros.scene_host`; what the parameters mean, in :mod:`captain_ros.ros.robot_params`.

Lifecycle: ``configure`` builds the backend and the interfaces, ``activate`` starts publishing,
``deactivate`` stops publishing (calls and the e-stop stay served), ``cleanup``/``shutdown``
close the backend. Motion calls run one at a time in their own callback group; the e-stop has
its own group, so under a multi-threaded executor it acts while a move is executing.
"""

from __future__ import annotations

from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.lifecycle import LifecycleNode, State, TransitionCallbackReturn
from std_srvs.srv import Trigger

import captain_ros.ros.arm_bridge  # noqa: F401 - registers the ROS 2 transport of backend ros_arm
from captain_ros.ros.calls import ROBOT_CALL_SRV, CallServer
from captain_ros.ros.credential import Verifier, load_key
from captain_ros.ros.episode_gate import EpisodeGate
from captain_ros.ros.estop import EStopInterface
from captain_ros.ros.liveness import Heartbeat, Liveness
from captain_ros.ros.locked_backend import LockedBackend
from captain_ros.ros.node_entities import created_since, destroy_entities, node_entities
from captain_ros.ros.params import declare
from captain_ros.ros.publish_log import PublishLog
from captain_ros.ros.robot_params import (
    PARAMS,
    camera_names,
    check_backend,
    scene_maker,
    service_plan,
)
from captain_ros.ros.scene_host import SceneHost
from captain_ros.ros.secure import SecureCommands, unseal
from captain_ros.ros.sim_services import SimServices
from captain_ros.ros.state_publisher import StatePublisher


class RobotNode(LifecycleNode):
    """Lifecycle node hosting one backend. ``backend`` injects a ready backend (tests, composition)."""

    executor_threads = 3  # calls/e-stop served while a long callback runs

    def __init__(self, backend: Any = None, **kwargs: Any) -> None:
        super().__init__("captain_robot", **kwargs)
        self.p = declare(self, PARAMS, None if backend is not None else check_backend)
        self._injected = backend
        self.host = SceneHost(None if backend is not None else scene_maker(self.p))
        self.last_error = ""
        self.publish_log = PublishLog(self)  # what the state topics published (bag completeness)
        self._timers: list[Any] = []
        self._configured: list[Any] = []  # what configure created (cleanup destroys it)
        self.scene_listeners = self.host.listeners  # called after load_scene (perception reset)
        self.call_group = MutuallyExclusiveCallbackGroup()
        self.pub_group = MutuallyExclusiveCallbackGroup()
        self.heartbeat = Heartbeat(self, "robot")
        self.gate = EpisodeGate(self, bool(self.p["require_episode"]))
        self.policy_alive = Liveness(
            self, "policy", MutuallyExclusiveCallbackGroup(), on_lost=self.gate.on_policy_lost
        )

    # --- lifecycle ------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        before = node_entities(self)
        try:
            self._configure()
        except Exception as exc:  # noqa: BLE001 - a failed transition says why, then fails
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.get_logger().error(f"configure failed: {self.last_error}")
            destroy_entities(self, created_since(self, before))
            return TransitionCallbackReturn.FAILURE
        self._configured = created_since(self, before)
        return TransitionCallbackReturn.SUCCESS

    def _configure(self) -> None:
        """Build the backend of the ``task``/``seed`` parameters and serve it."""
        task, seed = self.p["task"], int(self.p["seed"])
        inner = self._injected if self.host.make is None else self.host.make(task, seed)
        # a latch from before a cleanup/configure cycle (a backend rebuild) is kept
        backend = self.host.open(inner, task, seed)
        key_file = self.p["key_file"]  # the secured graph: signed calls and commands
        verifier = Verifier(load_key(key_file)) if key_file else None
        self.calls = CallServer(
            self,
            ROBOT_CALL_SRV,
            lambda n, kw: self.service.call(n, kw),
            ("motion",),
            self.call_group,
            gate=self.gate.refusal,
            unseal=None if verifier is None else lambda r: unseal(verifier, r),
        )
        self.estop = EStopInterface(
            self,
            backend.estop,
            backend.reset_estop,
            lambda: self.host.require().estopped,
            secure=verifier is not None,
        )
        self.host.on_latched = self.estop.publish_state
        plan = service_plan(self.p, backend, secured=verifier is not None)
        self.sim = SimServices(self, self.call_group, served=plan.plain)
        if verifier is not None:
            handlers = {
                "estop_reset": (Trigger, self.estop.signed_reset),
                **{n: self.sim.handler(n) for n in plan.signed},
            }
            self.secure = SecureCommands(self, verifier, handlers, self.call_group)
        spec = backend.spec
        self.state_pub = StatePublisher(self, spec.arm_names, camera_names(self.p, spec.cameras))
        self.state_pub.publish_static(spec)
        self.get_logger().info(
            f"configured {self.p['backend']} backend, arms {spec.arm_names}, "
            f"cameras {self.state_pub.cameras}"
        )

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        rate_hz = self.get_parameter("joint_state_rate_hz").value
        camera_hz = self.get_parameter("camera_rate_hz").value
        self._timers = [
            self.create_timer(1.0 / rate_hz, self.publish_state, callback_group=self.pub_group)
        ]
        if camera_hz > 0:
            self._timers.append(
                self.create_timer(
                    1.0 / camera_hz, self.publish_cameras, callback_group=self.pub_group
                )
            )
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        for t in self._timers:
            self.destroy_timer(t)
        self._timers = []
        return super().on_deactivate(state)

    def on_cleanup(self, state: State) -> TransitionCallbackReturn:
        """Release what configure created (interfaces and backend); configure may run again."""
        destroy_entities(self, self._configured)
        self._configured = []
        self.host.close()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        self.host.close()
        return TransitionCallbackReturn.SUCCESS

    @property
    def backend(self) -> LockedBackend | None:
        return self.host.backend

    @property
    def service(self) -> Any:
        return self.host.service

    @property
    def scene(self) -> tuple[str, int] | None:
        return self.host.scene

    # --- scene ----------------------------------------------------------------------------------
    def load_scene(self, task: str, seed: int) -> tuple[bool, str]:
        """Reset the current scene (same task and seed) or build another; ``(success, message)``."""
        ok, message, _swapped = self.host.load(task, seed)  # a new backend's latch is followed
        return ok, message

    # --- publishing -----------------------------------------------------------------------------
    def publish_state(self) -> None:
        if self.backend is not None:
            self.state_pub.publish_state(self.backend)

    def publish_cameras(self) -> None:
        if self.backend is not None:
            self.state_pub.publish_cameras(self.backend, self.p["publish_depth"])


def main(argv: list[str] | None = None) -> int:
    """Run the robot node alone (no perception node: ``robot_stack`` runs both)."""
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [RobotNode()])
