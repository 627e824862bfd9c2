"""The humanoid bridge over ROS: the coordinator's side of the controller node.

:class:`RosHumanoidBridge` implements :class:`~captain_ros.backends.humanoid.bridge.HumanoidBridge`
with the controller node's services (``/captain/humanoid/*``); :meth:`advance` waits, driven by the
state topic, until the controller's clock has advanced by the requested time (the controller
free-runs at fixed rates; nothing is stepped on demand), and reports the robots whose velocity
command the controller's watchdog expired meanwhile (from the topic's expiry counters; an expiry in
the state period before the call may count for this interval). Snapshots are ids stored by the controller.
Calls are synchronous and must come from a thread that does not spin ``node``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from captain_ros_interfaces.srv import LoadScene, PrivilegedState, Restore, RobotCall, Snapshot
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from captain_ros.backends.humanoid.bridge import HumanoidBridge
from captain_ros.backends.humanoid.remote import decode_state, raise_for
from captain_ros.backends.humanoid.types import (
    AdvanceReport,
    ArmJoints,
    BaseLimits,
    BaseVelocity,
    HumanoidSpec,
    HumanoidState,
    PairSpec,
)
from captain_ros.core.errors import CaptainError
from captain_ros.ros.calls import call_sync
from captain_ros.ros.estop import ESTOP_RESET_SRV, ESTOP_STATE_TOPIC, ESTOP_TRIGGER_SRV, LATCHED_QOS
from captain_ros.ros.humanoid_params import PREFIX


@dataclass(frozen=True)
class RemoteSnapshot:
    """A snapshot stored by the controller node: its id and the state digest at that instant."""

    id: str
    digest: str


def _digest(message: str) -> str:
    return message.split("digest=", 1)[1].strip() if "digest=" in message else ""


class RosBridgeError(CaptainError):
    """The controller node did not answer (not running, or too slow)."""


class RosHumanoidBridge(HumanoidBridge):
    """Client of a running ``captain_humanoid`` node.

    Args:
        node: A node spun by an executor on another thread.
        timeout_s: Longest wait for one service reply [s].
    """

    def __init__(self, node: Any, timeout_s: float = 30.0, callback_group: Any = None) -> None:
        self.node = node
        self.timeout_s = float(timeout_s)
        kw = {"callback_group": callback_group}
        self._call = node.create_client(RobotCall, f"{PREFIX}/call", **kw)
        self._snap = node.create_client(Snapshot, f"{PREFIX}/snapshot", **kw)
        self._restore = node.create_client(Restore, f"{PREFIX}/restore", **kw)
        self._priv = node.create_client(PrivilegedState, f"{PREFIX}/privileged_state", **kw)
        self._load = node.create_client(LoadScene, f"{PREFIX}/load_scene", **kw)
        self._trigger = node.create_client(Trigger, ESTOP_TRIGGER_SRV, **kw)
        self._reset = node.create_client(Trigger, ESTOP_RESET_SRV, **kw)
        self._time = -1.0
        self._expiries: dict[str, int] = {}
        self._latched = False
        self._tick = threading.Condition()
        node.create_subscription(String, f"{PREFIX}/state", self._on_state, 10, **kw)
        node.create_subscription(Bool, ESTOP_STATE_TOPIC, self._on_estop, LATCHED_QOS, **kw)
        self._spec: PairSpec | None = None

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Every service answers and a state message arrived (the baseline of expiry counting)."""
        if not all(
            c.wait_for_service(timeout_sec=timeout_s)
            for c in (self._call, self._snap, self._restore, self._priv, self._load)
        ):
            return False
        return self._first_state(timeout_s)

    # --- plumbing --------------------------------------------------------------------------------
    def _on_state(self, msg: String) -> None:
        try:
            d = json.loads(msg.data)
            t = float(d["time_s"])
            expiries = {str(r): int(n) for r, n in dict(d.get("watchdog_expiries") or {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        with self._tick:
            self._time, self._expiries = t, expiries
            self._tick.notify_all()

    def _first_state(self, timeout_s: float) -> bool:
        """Wait for the first state message: the node's expiry counters run since its start, so
        the first one is the baseline of expiry counting."""
        with self._tick:
            return self._tick.wait_for(lambda: self._time >= 0.0, timeout=timeout_s)

    def _on_estop(self, msg: Bool) -> None:
        self._latched = bool(msg.data)

    def _srv(self, client: Any, req: Any) -> Any:
        resp = call_sync(client, req, self.timeout_s)  # waits for the server first
        if resp is None and not client.service_is_ready():
            raise RosBridgeError(
                f"{client.srv_name} is not served (no humanoid controller on this domain after "
                f"{self.timeout_s:.0f} s)"
            )
        if resp is None:
            raise RosBridgeError(f"{client.srv_name} did not answer within {self.timeout_s:.0f} s")
        return resp

    def _rpc(self, name: str, **kwargs: Any) -> Any:
        resp = self._srv(
            self._call, RobotCall.Request(capability=name, kwargs_json=json.dumps(kwargs))
        )
        return raise_for(json.loads(resp.result_json))

    # --- the bridge ------------------------------------------------------------------------------
    @property
    def spec(self) -> PairSpec:
        if self._spec is None:
            d = self._rpc("spec")
            robots = []
            for r in d["robots"]:
                lim = BaseLimits(**d["limits"][r])
                names = tuple(f"{'a' if r == 'robot_a' else 'b'}_{i}" for i in range(14))
                arms = ArmJoints(names, -np.pi * np.ones(14), np.pi * np.ones(14), np.ones(14))
                robots.append(HumanoidSpec(r, lim, arms, 0.78))
            self._spec = PairSpec(tuple(robots), float(d["control_dt_s"]), float(d["physics_dt_s"]))
        return self._spec

    def time_s(self) -> float:
        return float(self._rpc("time"))

    def state(self, robot: str) -> HumanoidState:
        return decode_state(self._rpc("state", robot=robot))

    def command_velocity(self, robot: str, velocity: BaseVelocity) -> BaseVelocity:
        v = self._rpc("command_velocity", robot=robot, **velocity.to_dict())
        return BaseVelocity(float(v["vx_m_s"]), float(v["vy_m_s"]), float(v["wz_rad_s"]))

    def command_height(self, robot: str, offset_m: float) -> float:
        return float(self._rpc("command_height", robot=robot, offset_m=float(offset_m)))

    def command_arms(self, robot: str, q_rad: np.ndarray, ramp_s: float) -> np.ndarray:
        return np.asarray(
            self._rpc(
                "command_arms", robot=robot, q_rad=[float(x) for x in q_rad], ramp_s=float(ramp_s)
            ),
            float,
        )

    def advance(self, duration_s: float) -> AdvanceReport:
        """Wait until the controller clock passed ``now + duration_s`` (state-topic driven)."""
        wall = max(10.0, 20.0 * float(duration_s))
        if not self._first_state(wall):
            raise RosBridgeError(f"no {PREFIX}/state message within {wall:.0f} s")
        with self._tick:
            before = dict(self._expiries)
        t0 = self.time_s()
        goal = t0 + float(duration_s)
        with self._tick:
            ok = self._tick.wait_for(
                lambda: self._time >= goal - 1e-9 or self._latched, timeout=wall
            )
            expired = tuple(sorted(r for r, n in self._expiries.items() if n > before.get(r, 0)))
        if self._latched:
            return AdvanceReport(max(0.0, self._time - t0), True, "e-stop latched", expired)
        if not ok:
            raise RosBridgeError(
                f"the controller clock did not advance {duration_s:.2f} s within {wall:.0f} s"
            )
        return AdvanceReport(self._time - t0, watchdog_expired=expired)

    def estop(self, reason: str = "") -> None:
        self._srv(self._trigger, Trigger.Request())

    def reset_estop(self) -> None:
        self._srv(self._reset, Trigger.Request())

    @property
    def estopped(self) -> bool:
        return self._latched

    def snapshot(self) -> RemoteSnapshot:
        resp = self._srv(self._snap, Snapshot.Request())
        if not resp.success:
            raise RosBridgeError(resp.message)
        return RemoteSnapshot(str(resp.snapshot_id), _digest(resp.message))

    def restore(self, snapshot: Any) -> str:
        sid = snapshot.id if isinstance(snapshot, RemoteSnapshot) else str(snapshot)
        resp = self._srv(self._restore, Restore.Request(snapshot_id=sid))
        if not resp.success:
            raise RosBridgeError(resp.message)
        return _digest(resp.message)

    def privileged_state(self) -> dict[str, Any]:
        resp = self._srv(self._priv, PrivilegedState.Request())
        if not resp.success:
            raise RosBridgeError(resp.message)
        return dict(json.loads(resp.state_json))

    def reset_monitor(self) -> None:
        self._rpc("reset_monitor")

    def load_scene(self, layout: str, seed: int) -> None:
        resp = self._srv(self._load, LoadScene.Request(task=layout, seed=int(seed)))
        if not resp.success:
            raise RosBridgeError(resp.message)
