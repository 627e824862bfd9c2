"""Serving and calling robot capabilities over the ``RobotCall`` service.

:class:`CallServer` exposes the capabilities of one service group (``motion`` on the robot node,
``perception`` on the perception node) of an in-process
:class:`~captain_ros.api.service.RobotService`. :class:`RosRobotCaller` is the policy side: it
implements the harness's ``RobotCaller`` protocol (``call(name, kwargs) -> Result`` and
``image(handle, camera)``) by routing each capability to the node that owns it. Neither raises:
transport problems become ``Result`` failures that say what to do. A call made inside a deadline
(:mod:`captain_ros.core.deadline`: the harness opens the episode's remaining wall time around each
call) waits at most that long plus 5 s; the serving node bounds the call itself by the deadline
derived from its arguments (:mod:`captain_ros.api.deadlines`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from captain_ros_interfaces.srv import ObservationImage, RobotCall
from rclpy.callback_groups import CallbackGroup
from rclpy.client import Client
from rclpy.node import Node

from captain_ros.api.registry import CAPABILITY_BY_NAME
from captain_ros.core import deadline
from captain_ros.core.result import FailureCategory, Result
from captain_ros.ros import convert
from captain_ros.ros.secure import seal

ROBOT_CALL_SRV = "/captain/robot/call"
PERCEPTION_CALL_SRV = "/captain/perception/call"
IMAGE_SRV = "/captain/perception/image"
ROUTES = {"motion": ROBOT_CALL_SRV, "perception": PERCEPTION_CALL_SRV}


class CallServer:
    """Serve ``RobotCall`` for the capabilities whose registry ``service`` is in ``groups``.

    Args:
        node: Owning node.
        name: Service name.
        dispatch: ``call(name, kwargs) -> Result`` (a ``RobotService``; never raises).
        groups: Registry service groups served here, e.g. ``("motion",)``.
        callback_group: Callback group of the service (calls are served one at a time when it is
            mutually exclusive).
        gate: ``gate(episode_id, capability) -> Result | None``: a refusal before anything is
            parsed or executed (the robot node's episode gate); None serves the call.
        unseal: The secured graph's credential check (:func:`captain_ros.ros.secure.unseal`):
            ``(inner kwargs_json, why refused)``; None: calls are not signed.
    """

    def __init__(
        self,
        node: Node,
        name: str,
        dispatch: Callable[[str, dict[str, Any]], Result],
        groups: Iterable[str],
        callback_group: CallbackGroup | None = None,
        gate: Callable[[str, str], Result | None] | None = None,
        unseal: Callable[[Any], tuple[str, str | None]] | None = None,
    ) -> None:
        self._dispatch = dispatch
        self._gate = gate
        self._unseal = unseal
        self.groups = tuple(groups)
        self.served = tuple(n for n, c in CAPABILITY_BY_NAME.items() if c.service in self.groups)
        self.calls = 0
        self.srv = node.create_service(
            RobotCall, name, self._on_call, callback_group=callback_group
        )

    def _on_call(self, req: RobotCall.Request, resp: RobotCall.Response) -> RobotCall.Response:
        self.calls += 1
        if self._unseal is not None:
            inner, why = self._unseal(req)
            if why is not None:
                return convert.fill_call_response(
                    resp,
                    Result.fail(
                        FailureCategory.PRECONDITION,
                        f"{str(req.capability)[:60]}: refused, {why}; nothing was executed",
                    ),
                )
            req.kwargs_json = inner
        refused = self._gate(str(req.episode_id), str(req.capability)) if self._gate else None
        if refused is not None:
            return convert.fill_call_response(resp, refused)
        try:
            name, kwargs = convert.parse_call_request(req)
        except ValueError as exc:
            result = Result.fail(
                FailureCategory.INVALID_ARGUMENT,
                f"{req.capability}: arguments are not a JSON object ({exc})",
            )
        else:
            if name not in self.served:
                result = Result.fail(
                    FailureCategory.UNKNOWN_ID,
                    f"{name!r} is not served here; served: {', '.join(self.served)}",
                )
            else:
                result = self._dispatch(name, kwargs)
        return convert.fill_call_response(resp, result)


class RosRobotCaller:
    """Harness ``RobotCaller`` backed by the robot and perception nodes' ``RobotCall`` services.

    Calls are synchronous and must be made from a thread that is not spinning ``node``'s
    executor (the harness's episode thread). ``finish`` is not routed: the harness owns it.

    Args:
        node: Node that owns the clients (spun by an executor on another thread).
        timeout_s: Longest wait for one call [s] (a move can take tens of seconds).

    The harness's episode observers see every call's Result; ``refuse`` (set per episode) may
    answer a call without sending it (e.g. after a cancel).
    """

    def __init__(
        self,
        node: Node,
        timeout_s: float = 120.0,
        callback_group: CallbackGroup | None = None,
        give_up: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.node = node
        self.give_up = give_up
        self.signer: Any = None  # the secured graph's Signer: every call is then signed
        self.timeout_s = float(timeout_s)
        self.episode_id = ""
        self.request_index_fn: Callable[[], int] = lambda: 0
        self.refuse: Callable[[str, dict[str, Any]], Result | None] | None = None
        self._clients: dict[str, Client[Any, Any]] = {
            g: node.create_client(RobotCall, s, callback_group=callback_group)
            for g, s in ROUTES.items()
        }
        self._image: Client[Any, Any] = node.create_client(
            ObservationImage, IMAGE_SRV, callback_group=callback_group
        )
        self._lock = threading.Lock()

    def wait_for_services(self, timeout_s: float = 10.0) -> bool:
        clients = [*self._clients.values(), self._image]
        return all(c.wait_for_service(timeout_sec=timeout_s) for c in clients)

    def call(self, name: str, kwargs: dict[str, Any]) -> Result:
        cap = CAPABILITY_BY_NAME.get(name) if isinstance(name, str) else None
        refused = self.refuse(str(name), kwargs) if self.refuse is not None else None
        if refused is not None:
            result = refused
        elif cap is None or cap.service not in self._clients:
            result = Result.fail(
                FailureCategory.UNKNOWN_ID,
                f"unknown capability {str(name)[:60]!r}; "
                "valid: "
                + ", ".join(n for n, c in CAPABILITY_BY_NAME.items() if c.service in self._clients),
            )
        else:
            result = self._remote(self._clients[cap.service], name, kwargs)
        return result

    def _remote(self, client: Any, name: str, kwargs: dict[str, Any]) -> Result:
        if not client.service_is_ready() and not client.wait_for_service(timeout_sec=5.0):
            return Result.fail(
                FailureCategory.INTERNAL_ERROR,
                f"{name}: the node serving "
                f"{client.srv_name} is not running; nothing was executed. Start it.",
            )
        try:
            req = convert.make_call_request(
                name,
                kwargs or {},
                episode_id=self.episode_id,
                request_index=self.request_index_fn(),
            )
        except (TypeError, ValueError) as exc:
            return Result.fail(
                FailureCategory.INVALID_ARGUMENT,
                f"{name}: arguments must be JSON-serialisable ({exc}); nothing moved",
            )
        if self.signer is not None and client is self._clients["motion"]:
            seal(self.signer, req)  # the robot node checks it; perception calls move nothing
        wait_s = self.timeout_s
        left = deadline.remaining_s()  # the episode's wall budget, opened by the harness
        if left is not None:  # the node bounds the call itself; this bounds the wait for it
            wait_s = max(1.0, min(wait_s, left + 5.0))
        resp = call_sync(client, req, wait_s, give_up=lambda: self.give_up() is not None)
        gone = self.give_up() if resp is None else None
        if gone is not None:
            return Result.fail(
                FailureCategory.HARDWARE,
                f"{name}: {gone} while the call was "
                "running; whether it completed is unknown. Stop issuing robot calls.",
            )
        if resp is None:
            return Result.fail(
                FailureCategory.TIMEOUT,
                f"{name}: no reply within {wait_s:.0f} s "
                "from the robot graph; check the robot node before retrying",
            )
        return convert.call_response_to_result(resp)

    def image(self, handle: str, camera: str) -> np.ndarray | None:
        if not self._image.service_is_ready():
            return None
        resp = call_sync(
            self._image,
            ObservationImage.Request(handle=str(handle), camera=str(camera)),
            30.0,
            give_up=lambda: self.give_up() is not None,
        )
        if resp is None or not resp.found:
            return None
        return convert.image_to_array(resp.image).copy()


GIVE_UP_CHECK_S = 0.1
"""How often a wait with ``give_up`` asks it [s]."""


def call_sync(
    client: Any, request: Any, timeout_s: float, give_up: Callable[[], bool] | None = None
) -> Any:
    """Send ``request`` and wait up to ``timeout_s`` [s] in all on an event; None without a
    reply.

    The server is waited for first: a request sent before the client has matched its server is
    dropped, not queued (Fast DDS, volatile), so a first call right after start-up would wait out
    its whole timeout (the CoEvolve node's ``load_scene`` on a loaded CI machine). Matched, that
    wait returns at once. ``give_up()`` (asked every :data:`GIVE_UP_CHECK_S`) ends either wait
    early, e.g. once the serving process is known to be dead."""
    end = time.monotonic() + timeout_s
    while not client.service_is_ready():
        if time.monotonic() >= end or (give_up is not None and give_up()):
            return None
        time.sleep(min(GIVE_UP_CHECK_S, max(0.0, end - time.monotonic())))
    done = threading.Event()
    future = client.call_async(request)
    future.add_done_callback(lambda _f: done.set())
    while not done.wait(
        min(GIVE_UP_CHECK_S, max(0.0, end - time.monotonic()))
        if give_up is not None
        else max(0.0, end - time.monotonic())
    ):
        if give_up is None or time.monotonic() >= end or give_up():
            client.remove_pending_request(future)
            return None
    return future.result()
