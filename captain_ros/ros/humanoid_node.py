"""Humanoid controller node: serves the humanoid pair's bridge over ROS at fixed rates.

The simulated pair (:class:`~captain_ros.backends.humanoid.sim.MujocoHumanoidPair`) free-runs on a
fixed-rate control timer: every tick advances one control period (50 Hz controllers, 500 Hz
physics), so with ``real_time_factor`` 1 the robots live in real time like hardware, and commands
arrive asynchronously as they would from a coordinator. Interfaces:

* ``/captain/humanoid/call`` (``RobotCall``): bridge calls by name with JSON arguments
  (:mod:`captain_ros.backends.humanoid.remote`: ``command_velocity``, ``command_height``,
  ``command_arms``, ``state``, ``spec``, ``time``, ``reset_monitor``); the reply carries the applied
  (clipped) command or the state;
* ``/captain/humanoid/state`` (``std_msgs/String``, JSON at ``state_rate_hz``): bridge time, both
  robots' states, the payload pose (simulation), the e-stop, and per robot the number of velocity
  commands the watchdog has expired since the node started (``watchdog_expiries``: a coordinator
  that refreshes too slowly sees it); ``/joint_states`` (both robots' base and arm joints);
* ``/captain/humanoid/snapshot``, ``/restore``, ``/privileged_state``, ``/load_scene`` (simulation;
  snapshot and restore answer ``digest=<state digest>`` taken atomically under the bridge lock, so
  the coordinator can verify a restoration while the controller keeps running);
* the e-stop topic and services of :mod:`captain_ros.ros.estop`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from captain_ros_interfaces.srv import LoadScene, PrivilegedState, Restore, RobotCall, Snapshot
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from captain_ros.ros import convert
from captain_ros.ros.estop import EStopInterface
from captain_ros.ros.humanoid_params import PARAMS, PREFIX
from captain_ros.ros.params import declare


class HumanoidNode(Node):
    """Hosts one humanoid pair; ``bridge`` injects a ready one (tests)."""

    executor_threads = 4

    def __init__(self, bridge: Any = None, **kwargs: Any) -> None:
        super().__init__("captain_humanoid", **kwargs)
        self.p = declare(self, PARAMS)
        self.lock = threading.RLock()
        self.bridge = (
            bridge if bridge is not None else self._make(self.p["layout"], int(self.p["seed"]))
        )
        self._snapshots: dict[str, Any] = {}
        self._expiries = dict.fromkeys(self.bridge.spec.robot_names, 0)
        ctl, srv = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        self.state_pub = self.create_publisher(String, f"{PREFIX}/state", 10)
        self.joint_pub = self.create_publisher(JointState, "/joint_states", 10)
        self.create_service(RobotCall, f"{PREFIX}/call", self._on_call, callback_group=srv)
        self.create_service(Snapshot, f"{PREFIX}/snapshot", self._on_snapshot, callback_group=srv)
        self.create_service(Restore, f"{PREFIX}/restore", self._on_restore, callback_group=srv)
        self.create_service(
            PrivilegedState, f"{PREFIX}/privileged_state", self._on_privileged, callback_group=srv
        )
        self.create_service(LoadScene, f"{PREFIX}/load_scene", self._on_load, callback_group=srv)
        self.estop = EStopInterface(
            self,
            lambda r: self.bridge.estop(r),
            lambda: self.bridge.reset_estop(),
            lambda: self.bridge.estopped,
        )
        dt = self.bridge.spec.control_dt_s
        self.create_timer(dt / self.p["real_time_factor"], self._tick, callback_group=ctl)
        self.create_timer(
            1.0 / self.p["state_rate_hz"],
            self._publish,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        self.get_logger().info(
            f"humanoid pair on layout {self.p['layout']} at {1 / dt:.0f} Hz control, "
            f"real-time factor {self.p['real_time_factor']}"
        )

    def _make(self, layout: str, seed: int) -> Any:
        from captain_ros.backends.humanoid.sim import MujocoHumanoidPair

        return MujocoHumanoidPair(layout, seed=seed, noise=float(self.p["noise"]))

    # --- timers ----------------------------------------------------------------------------------
    def _tick(self) -> None:
        with self.lock:
            rep = self.bridge.advance(self.bridge.spec.control_dt_s)
            for r in rep.watchdog_expired:
                self._expiries[r] += 1

    def _publish(self) -> None:
        with self.lock:
            states = {r: self.bridge.state(r) for r in self.bridge.spec.robot_names}
            priv = self.bridge.privileged_state()
            expiries = dict(self._expiries)
        msg = {
            "time_s": priv["time_s"],
            "estop": priv["estop"],
            "payload": priv["payload"],
            "robots": {r: s.to_dict() for r, s in states.items()},
            "watchdog_expiries": expiries,
        }
        self.state_pub.publish(String(data=json.dumps(msg)))
        names: list[str] = []
        position: list[float] = []
        for r, s in states.items():
            names += [f"{r}_x", f"{r}_y", f"{r}_yaw", *self.bridge.spec.robot(r).arms.joint_names]
            position += [s.base.x_m, s.base.y_m, s.base.yaw_rad, *(float(q) for q in s.arm_q_rad)]
        js = JointState(name=names, position=position)
        js.header.stamp = self.get_clock().now().to_msg()
        self.joint_pub.publish(js)

    # --- services --------------------------------------------------------------------------------
    def _on_call(self, req: RobotCall.Request, resp: RobotCall.Response) -> RobotCall.Response:
        from captain_ros.backends.humanoid.remote import serve

        try:
            kwargs = json.loads(req.kwargs_json or "{}")
            if not isinstance(kwargs, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            reply = {
                "ok": False,
                "value": None,
                "error": f"kwargs_json is not a JSON object ({exc})",
                "error_type": "invalid",
            }
        else:
            with self.lock:
                reply = serve(self.bridge, req.capability, kwargs)
        resp.success, resp.failure_category = (
            bool(reply["ok"]),
            "" if reply["ok"] else reply["error_type"],
        )
        resp.result_json = convert.dumps(reply)
        return resp

    def _on_snapshot(self, _req: Snapshot.Request, resp: Snapshot.Response) -> Snapshot.Response:
        with self.lock:
            sid = f"snap_{len(self._snapshots)}"
            snap = self._snapshots[sid] = self.bridge.snapshot()
        resp.success, resp.message, resp.snapshot_id = True, f"digest={snap.digest}", sid
        return resp

    def _on_restore(self, req: Restore.Request, resp: Restore.Response) -> Restore.Response:
        snap = self._snapshots.get(req.snapshot_id)
        if snap is None:
            resp.success, resp.message = False, f"unknown snapshot {req.snapshot_id!r}"
            return resp
        with self.lock:
            digest = self.bridge.restore(snap)
        resp.success, resp.message = True, f"digest={digest}"
        return resp

    def _on_privileged(self, _req: Any, resp: PrivilegedState.Response) -> PrivilegedState.Response:
        with self.lock:
            resp.state_json = convert.dumps(self.bridge.privileged_state())
        resp.success, resp.message = True, ""
        return resp

    def _on_load(self, req: LoadScene.Request, resp: LoadScene.Response) -> LoadScene.Response:
        try:
            new = self._make(req.task or self.p["layout"], int(req.seed))
        except Exception as exc:  # noqa: BLE001 - unknown layout: answer, do not die
            resp.success, resp.message = False, f"cannot load layout {req.task!r}: {exc}"
            return resp
        with self.lock:
            self.bridge.close()
            self.bridge, self._snapshots = new, {}
        resp.success, resp.message = (
            True,
            f"loaded layout {req.task or self.p['layout']} seed {req.seed}",
        )
        return resp


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [HumanoidNode()])


if __name__ == "__main__":
    raise SystemExit(main())
