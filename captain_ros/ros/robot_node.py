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
from captain_ros.backends.registry import GRAPH_ONLY, names
from captain_ros.evaluation.config import BackendConfig, EpisodeConfig
from captain_ros.evaluation.episode import make_robot_backend, robot_service
from captain_ros.ros.access import DEBUG_SERVICES, debug_services, episode_refusal
from captain_ros.ros.calls import ROBOT_CALL_SRV, CallServer
from captain_ros.ros.credential import Verifier, load_key
from captain_ros.ros.estop import EStopInterface
from captain_ros.ros.liveness import Heartbeat, Liveness
from captain_ros.ros.locked_backend import LockedBackend
from captain_ros.ros.params import Param, declare
from captain_ros.ros.publish_log import PublishLog
from captain_ros.ros.secure import SecureCommands, unseal
from captain_ros.ros.sim_services import SimServices
from captain_ros.ros.state_publisher import StatePublisher

KNOWN_BACKENDS = (*names(launched=True), *GRAPH_ONLY)
HARDWARE_BACKENDS = names(hardware=True)
"""No per-request ground truth through the graph (also when emulated): bags as on the real rig."""
PARAMS = (
    Param("backend", "mujoco", "Robot backend.", choices=KNOWN_BACKENDS),
    Param("task", "pick_place", "Task whose scene the simulator loads (simulation backends)."),
    Param("seed", 1000, "Scene seed of the task.", min_value=0),
    Param(
        "joint_state_rate_hz",
        10.0,
        "Rate of /joint_states, /tf and wrench [Hz] (applied at the next activate).",
        1.0,
        1000.0,
        read_only=False,
    ),
    Param(
        "camera_rate_hz",
        0.0,
        "Live camera preview rate [Hz]; 0: only observations are published "
        "(by the perception node). Applied at the next activate.",
        0.0,
        60.0,
        read_only=False,
    ),
    Param("cameras", "", "Comma-separated cameras to publish; empty = all."),
    Param("publish_depth", True, "Also publish 32FC1 depth images [m]."),
    Param(
        "backend_config",
        "",
        "Rig config of a hardware backend ('' = its default: "
        "config/piper.yaml for piper (config/piper_dual.yaml: the dual rig), config/xr1.yaml "
        "for ros_arm).",
    ),
    Param("can", "", "piper: CAN interface(s), can0 or can0,can1 ('' = from the config)."),
    Param("emulate", False, "piper: the CAN emulator with the task's scene instead of hardware."),
    Param(
        "require_episode",
        True,
        "Serve robot calls only for the active episode (its "
        "episode_id); false: any caller (in-process tests, a bench without a policy node).",
    ),
    Param(
        "active_episode",
        "",
        "The episode whose robot calls are served; the policy node sets "
        "it for a goal's duration ('' = none).",
        read_only=False,
    ),
    Param(
        "key_file",
        "",
        "Secured graph: the deployment's key file (0600); robot calls, the "
        "e-stop reset, snapshot/restore and load_scene then need its credential ('' = open "
        "graph; docs/ros.md).",
    ),
    Param(
        "debug_services",
        False,
        "Also serve snapshot/restore/load_scene on a real rig (never "
        "privileged_state); simulations and emulated rigs always serve them.",
    ),
)


def implemented_backends() -> tuple[str, ...]:
    return names(launched=True)


def backend_config(values: dict[str, Any]) -> BackendConfig:
    """The backend of the node parameters (``backend`` and the rig's ``backend_config``, ``can``,
    ``emulate``), as every front end's episode has it."""
    return EpisodeConfig.from_ros_parameters(values).backend


def has_ground_truth(backend: Any) -> bool:
    """Whether a hardware backend is emulated and knows its world's ground truth (the PiPER
    emulator, the simulated ROS arm driver); a real rig raises ``NotSupportedError``."""
    from captain_ros.core.errors import NotSupportedError

    try:
        backend.privileged_state()
    except NotSupportedError:
        return False
    return True


def check_backend(values: dict[str, Any]) -> str | None:
    if values["backend"] not in implemented_backends():
        return (
            f"backend {values['backend']!r} is not implemented yet; implemented: "
            f"{', '.join(implemented_backends())}"
        )
    return None


class RobotNode(LifecycleNode):
    """Lifecycle node hosting one backend. ``backend`` injects a ready backend (tests, composition)."""

    executor_threads = 3  # calls/e-stop served while a long callback runs

    def __init__(self, backend: Any = None, **kwargs: Any) -> None:
        super().__init__("captain_robot", **kwargs)
        self.p = declare(self, PARAMS, None if backend is not None else check_backend)
        self._injected = backend
        self.backend: LockedBackend | None = None
        self.service: Any = None
        self._initial: Any = None
        self.last_error = ""
        self.publish_log = PublishLog(self)  # what the state topics published (bag completeness)
        self._latched_reason: str | None = None  # the e-stop latch across backend rebuilds
        self._timers: list[Any] = []
        self.scene_listeners: list[Any] = []  # called after load_scene (e.g. perception reset)
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
        inner = self._injected or make_robot_backend(
            backend_config(self.p), self.p["task"], int(self.p["seed"])
        )
        # a latch from before a cleanup/configure cycle (a backend rebuild) is kept
        backend = self.backend = LockedBackend(inner, latched_reason=self._latched_reason)
        self._set_scene(self.p["task"], int(self.p["seed"]))
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
        if self.backend is not None:
            self._latched_reason = self.backend.latched_reason
            if self._injected is None:
                self.backend.close()
        self.backend = None

    def _backend(self) -> LockedBackend:
        """The configured backend (robot calls, scene loads and the e-stop state need one)."""
        if self.backend is None:
            raise RuntimeError("the robot node is not configured (no backend)")
        return self.backend

    # --- scene ----------------------------------------------------------------------------------
    def _set_scene(self, task: str, seed: int) -> None:
        """Fresh motion service over the (new) backend; remember its initial snapshot."""
        backend = self._backend()
        self.scene = (task, seed)
        try:
            self._initial = backend.snapshot()
        except Exception:  # noqa: BLE001 - hardware: no snapshots
            self._initial = None
        self.service = robot_service(backend)  # motion; perception: the perception node

    def load_scene(self, task: str, seed: int) -> tuple[bool, str]:
        """Reset the current scene (same task and seed) or build another; ``(success, message)``."""
        if (task, seed) == self.scene and self._initial is not None:
            backend = self._backend()
            with backend.lock:
                backend.restore(self._initial)
                self._set_scene(task, seed)
            message = "scene reset to its initial state"
        elif (task, seed) == self.scene:
            return True, "scene loaded (this backend has no snapshot to reset it)"
        elif self._injected is not None:
            return False, f"this robot node hosts a fixed backend with scene {self.scene}"
        else:
            try:
                new = make_robot_backend(
                    backend_config({**self.p, "task": task, "seed": seed}), task, seed
                )
            except Exception as exc:  # noqa: BLE001 - unknown task, bad seed
                return False, f"cannot load {task!r} seed {seed}: {exc}"
            backend = self._backend()
            with backend.lock:
                backend.swap(new)
                self._set_scene(task, seed)
            self._watch_latch()
            message = f"loaded {task} seed {seed}"
        for listener in self.scene_listeners:
            listener()
        return True, message

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
