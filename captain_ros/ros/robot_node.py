"""Robot node (lifecycle): hosts the Backend and the guarded MotionService.

Serves the motion capabilities on ``/captain/robot/call`` (``RobotCall``), the e-stop
(:mod:`captain_ros.ros.estop`: ``/captain/estop`` topic, trigger/reset services, latched state),
the simulation-only services of :mod:`captain_ros.ros.sim_services`, and publishes the state
topics of :mod:`captain_ros.ros.state_publisher` (``/joint_states``, ``/tf``, ``/tf_static``,
``/camera/<c>/...``, ``/captain/wrench/<arm>``). Robot calls are served only for the episode
named by the ``active_episode`` parameter (the policy node sets it per goal;
:mod:`captain_ros.ros.access`); the gate closes by itself when the policy process dies
(:mod:`captain_ros.ros.liveness`).

Lifecycle: ``configure`` builds the backend and the interfaces, ``activate`` starts publishing,
``deactivate`` stops publishing (calls and the e-stop stay served), ``cleanup``/``shutdown``
close the backend. Motion calls run one at a time in their own callback group; the e-stop has
its own group, so under a multi-threaded executor it acts while a move is executing.
"""

from __future__ import annotations

from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.lifecycle import LifecycleNode, State, TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

import captain_ros.ros.arm_bridge  # noqa: F401 - registers the ROS 2 transport of backend ros_arm
from captain_ros.evaluation.episode import make_robot_backend
from captain_ros.ros.access import DEBUG_SERVICES, debug_services, episode_refusal
from captain_ros.ros.calls import ROBOT_CALL_SRV, CallServer
from captain_ros.ros.credential import Verifier, load_key
from captain_ros.ros.estop import EStopInterface
from captain_ros.ros.liveness import Heartbeat, Liveness
from captain_ros.ros.locked_backend import LockedBackend
from captain_ros.ros.params import declare
from captain_ros.ros.publish_log import PublishLog
from captain_ros.ros.robot_params import (
    HARDWARE_BACKENDS,
    PARAMS,
    backend_config,
    check_backend,
    has_ground_truth,
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
        self.host = SceneHost(None if backend is not None else self._make)
        self.last_error = ""
        self.publish_log = PublishLog(self)  # what the state topics published (bag completeness)
        self._timers: list[Any] = []
        self.scene_listeners = self.host.listeners  # called after load_scene (perception reset)
        self.call_group = MutuallyExclusiveCallbackGroup()
        self.pub_group = MutuallyExclusiveCallbackGroup()
        self.heartbeat = Heartbeat(self, "robot")
        self.policy_alive = Liveness(
            self, "policy", MutuallyExclusiveCallbackGroup(), on_lost=self._on_policy_lost
        )

    def _on_policy_lost(self, instance: str) -> None:
        """The policy node died: its episode's gate closes (no further robot calls; a call in
        flight finishes, guarded, and the arm then holds where it left it)."""
        active = str(self.get_parameter("active_episode").value)
        if active:
            self.set_parameters([Parameter("active_episode", Parameter.Type.STRING, "")])
            self.get_logger().warning(
                f"the policy process {instance} died during episode "
                f"{active}: robot calls are refused until the next goal; "
                "the arm holds"
            )

    # --- lifecycle ------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        before = self._entities()
        try:
            return self._configure(before)
        except Exception as exc:  # noqa: BLE001 - a failed transition says why, then fails
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.get_logger().error(f"configure failed: {self.last_error}")
            for e in self._entities():
                if e not in before:
                    self._destroy(e)
            return TransitionCallbackReturn.FAILURE

    def _destroy(self, entity: Any) -> None:
        for kind in ("publisher", "subscription", "service"):
            fn = getattr(self, f"destroy_{kind}")
            try:
                fn(entity)
                return
            except Exception:  # noqa: BLE001 - not that kind of entity
                continue

    def _configure(self, before: list[Any]) -> TransitionCallbackReturn:
        task, seed = self.p["task"], int(self.p["seed"])
        # a latch from before a cleanup/configure cycle (a backend rebuild) is kept
        backend = self.host.open(self._injected or self._make(task, seed), task, seed)
        spec = backend.spec
        names = [c.strip() for c in self.p["cameras"].split(",") if c.strip()]
        verifier = self._verifier()
        self.calls = CallServer(
            self,
            ROBOT_CALL_SRV,
            lambda n, kw: self.service.call(n, kw),
            ("motion",),
            self.call_group,
            gate=self._episode_gate,
            unseal=None if verifier is None else lambda r: unseal(verifier, r),
        )
        self.estop = EStopInterface(
            self,
            backend.estop,
            backend.reset_estop,
            lambda: self._backend().estopped,
            secure=verifier is not None,
        )
        self._watch_latch()
        served = debug_services(
            self.p["backend"] in HARDWARE_BACKENDS,
            has_ground_truth(backend),
            bool(self.p["debug_services"]),
        )
        signed = {n: v for n, v in served.items() if n in DEBUG_SERVICES} if verifier else {}
        self.sim = SimServices(
            self, self.call_group, served={**served, **dict.fromkeys(signed, False)}
        )
        if verifier is not None:
            handlers = {
                "estop_reset": (Trigger, self.estop.signed_reset),
                **{n: self.sim.handler(n) for n, on in signed.items() if on},
            }
            self.secure = SecureCommands(self, verifier, handlers, self.call_group)
        self.state_pub = StatePublisher(self, spec.arm_names, tuple(names or spec.cameras))
        self.state_pub.publish_static(spec)
        self._configured = [e for e in self._entities() if e not in before]
        self.get_logger().info(
            f"configured {self.p['backend']} backend, arms {spec.arm_names}, "
            f"cameras {self.state_pub.cameras}"
        )
        return TransitionCallbackReturn.SUCCESS

    def _verifier(self) -> Verifier | None:
        """The credential check of the secured graph (None: open graph)."""
        if not self.p["key_file"]:
            return None
        return Verifier(load_key(self.p["key_file"]))

    def _episode_gate(self, episode_id: str, capability: str) -> Any:
        """A refusal (a ``Result``) of a call outside the active episode; None: serve it."""
        if not self.p["require_episode"]:
            return None
        active = str(self.get_parameter("active_episode").value)
        return episode_refusal(active, episode_id, capability)

    def _watch_latch(self) -> None:
        """A latch tripped below the node (a safety guard, the hardware's own stop) is the robot's
        e-stop: kept across scene loads and published on ``/captain/estop/state`` (the policy
        node refuses new goals), exactly like the operator's."""
        latch = getattr(self._backend().inner, "latch", None)
        if latch is not None:
            latch.listeners.append(self._on_latched)

    def _on_latched(self, event: Any) -> None:
        backend = self.backend
        if backend is not None and backend.latched_reason is None:
            backend.latched_reason = f"{event.source}: {event.reason}"
        self.estop.publish_state()

    def _entities(self) -> list[Any]:
        return [*self.publishers, *self.subscriptions, *self.services]

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
        from rclpy.publisher import Publisher
        from rclpy.service import Service

        for e in getattr(self, "_configured", []):
            if isinstance(e, Publisher):
                self.destroy_publisher(e)
            elif isinstance(e, Service):
                self.destroy_service(e)
            else:
                self.destroy_subscription(e)
        self._configured = []
        self.close_backend()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        self.close_backend()
        return TransitionCallbackReturn.SUCCESS

    def close_backend(self) -> None:
        self.host.close()

    @property
    def backend(self) -> LockedBackend | None:
        return self.host.backend

    @property
    def service(self) -> Any:
        return self.host.service

    @property
    def scene(self) -> tuple[str, int] | None:
        return self.host.scene

    def _backend(self) -> LockedBackend:
        return self.host.require()

    # --- scene ----------------------------------------------------------------------------------
    def _make(self, task: str, seed: int) -> Any:
        """The backend of ``task``/``seed`` with the node's backend parameters."""
        config = backend_config({**self.p, "task": task, "seed": seed})
        return make_robot_backend(config, task, seed)

    def load_scene(self, task: str, seed: int) -> tuple[bool, str]:
        """Reset the current scene (same task and seed) or build another; ``(success, message)``."""
        ok, message, swapped = self.host.load(task, seed)
        if swapped:
            self._watch_latch()
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
