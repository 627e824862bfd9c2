"""The secured graph's transport: signed robot calls and signed commands over standard types.

In secure mode (:mod:`captain_ros.ros.credential`) the robot node serves the commands that move
or un-stop the robot only with a valid credential:

- robot calls (``/captain/robot/call``, ``RobotCall``): the request's ``kwargs_json`` is an
  envelope ``{"signed": <kwargs_json>, "auth": <token>}`` whose token covers the capability, the
  inner ``kwargs_json``, the episode id and the request index (:func:`seal` / :func:`unseal`);
- the e-stop reset, snapshot, restore and scene loading go through one service,
  ``/captain/secure/command`` (``RobotCall`` again: ``capability`` names the operation,
  ``kwargs_json`` is the envelope of the operation's request fields; ``result_json`` carries the
  operation's response fields). :class:`SecureCommands` serves it on the robot node;
  :class:`SignedClient` calls it with the interface of an rclpy client of the operation's own
  type (so :func:`~captain_ros.ros.calls.call_sync` and the policy node use it unchanged).

The plain ``/captain/estop/reset`` then answers ``success: false`` naming the signed way, and
the plain snapshot/restore/load_scene services are not served. Triggering the e-stop stays open
to every process (stopping is never refused).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from captain_ros_interfaces.srv import RobotCall
from rclpy.node import Node
from rclpy.task import Future

from captain_ros.ros.credential import Signer, Verifier

SECURE_COMMAND_SRV = "/captain/secure/command"


def _call_fields(
    capability: str, kwargs_json: str, episode_id: str, request_index: int
) -> dict[str, Any]:
    return {
        "capability": capability,
        "kwargs_json": kwargs_json,
        "episode_id": episode_id,
        "request_index": int(request_index),
    }


def seal(signer: Signer, req: Any) -> Any:
    """Wrap ``req.kwargs_json`` (a ``RobotCall.Request``) in a signed envelope; returns ``req``."""
    fields = _call_fields(req.capability, req.kwargs_json, req.episode_id, req.request_index)
    req.kwargs_json = json.dumps({"signed": req.kwargs_json, "auth": signer.token("call", fields)})
    return req


def unseal(verifier: Verifier, req: Any) -> tuple[str, str | None]:
    """``(inner kwargs_json, None)`` of a validly signed request, else ``("", why)``."""
    try:
        env = json.loads(req.kwargs_json or "{}")
    except ValueError:
        env = None
    if not isinstance(env, dict) or not isinstance(env.get("signed"), str):
        return "", "no credential (secure mode: calls must be signed)"
    fields = _call_fields(req.capability, env["signed"], req.episode_id, req.request_index)
    why = verifier.check("call", fields, env.get("auth"))
    return (env["signed"], None) if why is None else ("", why)


def fields_of(msg: Any) -> dict[str, Any]:
    """A flat ROS message's fields (strings, numbers, booleans) as a dict."""
    return {f: getattr(msg, f) for f in msg.get_fields_and_field_types()}


def fill(msg: Any, fields: dict[str, Any]) -> Any:
    for f in msg.get_fields_and_field_types():
        if f in fields:
            setattr(msg, f, fields[f])
    return msg


Handler = tuple[Any, Callable[[Any, Any], Any]]
"""``(service type, callback(request, response) -> response)`` of one operation."""


class SecureCommands:
    """``/captain/secure/command`` on ``node``: each operation's own callback, behind the
    credential check."""

    def __init__(
        self,
        node: Node,
        verifier: Verifier,
        handlers: dict[str, Handler],
        callback_group: Any = None,
    ) -> None:
        self.node = node
        self.verifier = verifier
        self.handlers = handlers
        self.refused = 0
        self.srv = node.create_service(
            RobotCall, SECURE_COMMAND_SRV, self._on_command, callback_group=callback_group
        )

    def _on_command(self, req: Any, resp: Any) -> Any:
        op = str(req.capability)
        inner, why = unseal(self.verifier, req)
        if op not in self.handlers:
            why = f"unknown operation {op[:60]!r}; valid: {', '.join(self.handlers)}"
        if why is not None:
            self.refused += 1
            self.node.get_logger().warning(f"refused {op[:60]!r}: {why}")
            resp.success, resp.failure_category = False, "precondition"
            resp.result_json = json.dumps({"success": False, "message": f"refused: {why}"})
            return resp
        srv_type, callback = self.handlers[op]
        try:
            fields = json.loads(inner or "{}")
            request = fill(srv_type.Request(), fields if isinstance(fields, dict) else {})
        except (ValueError, TypeError, AssertionError) as exc:
            resp.success, resp.failure_category = False, "invalid_argument"
            resp.result_json = json.dumps({"success": False, "message": f"bad request: {exc}"})
            return resp
        out = fields_of(callback(request, srv_type.Response()))
        resp.success, resp.failure_category = bool(out.get("success", True)), ""
        resp.result_json = json.dumps(out, default=str)
        return resp


class SignedClient:
    """An rclpy-client look-alike for one operation of ``/captain/secure/command``: takes and
    returns the operation's own request/response types, signing each request."""

    def __init__(
        self, node: Node, op: str, srv_type: Any, signer: Signer, callback_group: Any = None
    ) -> None:
        self.op, self.srv_type, self.signer = op, srv_type, signer
        self.srv_name = f"{SECURE_COMMAND_SRV} ({op})"
        self._client: Any = node.create_client(
            RobotCall, SECURE_COMMAND_SRV, callback_group=callback_group
        )
        self._inner: dict[int, Any] = {}
        self._lock = threading.Lock()

    def wait_for_service(self, timeout_sec: float | None = None) -> bool:
        return bool(self._client.wait_for_service(timeout_sec=timeout_sec))

    def service_is_ready(self) -> bool:
        return bool(self._client.service_is_ready())

    def call_async(self, request: Any) -> Future[Any]:
        req = RobotCall.Request(capability=self.op, kwargs_json=json.dumps(fields_of(request)))
        inner = self._client.call_async(seal(self.signer, req))
        out: Future[Any] = Future()
        with self._lock:
            self._inner[id(out)] = inner
        inner.add_done_callback(lambda f: self._done(f, out))
        return out

    def _done(self, inner: Future[Any], out: Future[Any]) -> None:
        with self._lock:
            self._inner.pop(id(out), None)
        out.set_result(self._response(inner.result()))

    def _response(self, resp: Any) -> Any:
        try:
            fields = json.loads(resp.result_json or "{}")
        except ValueError:
            fields = {"success": False, "message": "malformed reply"}
        return fill(self.srv_type.Response(), fields if isinstance(fields, dict) else {})

    def remove_pending_request(self, future: Future[Any]) -> None:
        with self._lock:
            inner = self._inner.pop(id(future), None)
        if inner is not None:
            self._client.remove_pending_request(inner)
