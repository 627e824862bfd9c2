"""The ``robot`` client that policy code calls, generated from the registry.

:func:`client_source` renders a Python class whose methods have exactly the registry's signatures
(``inspect.signature`` and ``help()`` show them) and docstrings; each method forwards ``(name,
kwargs)`` to a transport function and wraps the reply in :class:`RobotResult` (a dict with
attribute access). Unknown keywords and surplus positional arguments are forwarded too (the latter
under ``"*args"``), so that the harness answers them with an ``invalid_argument`` Result like any
other bad argument instead of a ``TypeError`` in the cell. In the sandbox the transport sends the call
over the pipe to the harness; the client never holds backend objects.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from captain_ros.api import registry


class RobotResult(dict):
    """A Result as policy code sees it: ``r["success"]`` or ``r.success``; ``bool(r)`` is success."""

    __slots__ = ()

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __bool__(self) -> bool:
        return bool(self.get("success"))

    def __repr__(self) -> str:
        head = "ok" if self.get("success") else f"FAILED {self.get('failure_category')}"
        return f"Result({head}: {self.get('message', '')!s:.200} value={self.get('value')!r:.400})"


def client_source(class_name: str = "Robot") -> str:
    """Source of the client class (methods forward to ``self._send(name, kwargs)``)."""
    lines = [
        f"class {class_name}:",
        '    """The robot API. Every method returns a Result dict and never raises."""',
        "    __slots__ = ('_send',)",
        "    def __init__(self, send):",
        "        object.__setattr__(self, '_send', send)",
        "    def __repr__(self):",
        "        return '<robot client: ' + ', '.join(CAPABILITY_NAMES) + '>'",
    ]
    for cap in registry.CAPABILITIES:
        params = ", ".join(
            ["self"]
            + [p.name if p.required else f"{p.name}={p.default!r}" for p in cap.params]
            + ["*_surplus", "**_unknown"]
        )
        doc = (
            cap.doc
            + "\n\n        Args:\n"
            + "".join(f"            {p.name}: {p.doc}\n" for p in cap.params)
            + f"\n        Returns: Result; value = {cap.returns}\n"
        )
        kwargs = (
            "{" + ", ".join([f"{p.name!r}: {p.name}" for p in cap.params] + ["**_unknown"]) + "}"
        )
        lines += [
            f"    def {cap.name}({params}):",
            f"        {doc!r}",
            f"        kwargs = {kwargs}",
            "        if _surplus:",
            "            kwargs['*args'] = list(_surplus)",
            f"        return self._send({cap.name!r}, kwargs)",
        ]
    lines.append(f"CAPABILITY_NAMES = {tuple(c.name for c in registry.CAPABILITIES)!r}")
    return "\n".join(lines) + "\n"


def build_client(transport: Callable[[str, dict[str, Any]], Any]) -> Any:
    """Instantiate the generated client over ``transport(name, kwargs) -> dict``."""
    namespace: dict[str, Any] = {}
    exec(compile(client_source(), "<robot client>", "exec"), namespace)  # noqa: S102 - our own source

    def send(name: str, kwargs: dict[str, Any]) -> RobotResult:
        reply = transport(name, kwargs)
        return reply if isinstance(reply, RobotResult) else RobotResult(reply)

    robot = namespace["Robot"](send)
    for cap in registry.CAPABILITIES:  # real docstrings and signatures for help()
        fn = getattr(type(robot), cap.name)
        fn.__doc__ = cap.doc
        fn.__signature__ = signature(cap)
    return robot


def signature(cap: registry.Capability) -> inspect.Signature:
    """The declared signature of a capability's client method (``self`` first)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature(
        [inspect.Parameter("self", kind)]
        + [
            inspect.Parameter(
                p.name, kind, default=inspect.Parameter.empty if p.required else p.default
            )
            for p in cap.params
        ]
    )
