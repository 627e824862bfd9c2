"""Shared ``main()`` plumbing: init, bring lifecycle nodes up, spin a multi-threaded executor."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.node import Node


def bring_up(node: Node) -> None:
    """Configure and activate a lifecycle node (no-op for plain nodes); raise if it refuses."""
    if isinstance(node, LifecycleNode):
        for step in (node.trigger_configure, node.trigger_activate):
            if step() != TransitionCallbackReturn.SUCCESS:
                raise RuntimeError(f"{node.get_name()}: lifecycle {step.__name__} failed")


def spin_nodes(nodes: Sequence[Node], threads: int | None = None) -> MultiThreadedExecutor:
    """A multi-threaded executor holding ``nodes`` (on their context; caller spins it)."""
    executor = MultiThreadedExecutor(num_threads=threads or max(4, 2 * len(nodes)),
                                     context=nodes[0].context if nodes else None)
    for n in nodes:
        executor.add_node(n)
    return executor


def run_nodes(argv: list[str] | None, factory: Callable[[], Sequence[Node]],
              autostart: bool = True) -> int:
    """Process entry point: ``rclpy.init``, build ``factory()``, bring up, spin until Ctrl-C."""
    args: list[Any] = list(sys.argv if argv is None else ["captain", *argv])
    rclpy.init(args=args)
    nodes: Sequence[Node] = ()
    try:
        nodes = factory()
        if autostart:
            for n in nodes:
                bring_up(n)
        spin_nodes(nodes).spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        for n in nodes:
            if isinstance(n, LifecycleNode):
                with contextlib.suppress(Exception):  # already finalized
                    n.trigger_shutdown()
            n.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
