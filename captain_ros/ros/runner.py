"""Shared ``main()`` plumbing: init, bring lifecycle nodes up, spin a multi-threaded executor."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import rclpy
from rclpy.executors import (
    Executor,
    ExternalShutdownException,
    MultiThreadedExecutor,
    SingleThreadedExecutor,
)
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.node import Node

from captain_ros.core.errors import CaptainError
from captain_ros.ros.entry import EXIT_REFUSED
from captain_ros.ros.params import ParameterError


class BringUpError(RuntimeError):
    """A lifecycle node refused a transition; the message carries the node's reason."""


def bring_up(node: Node) -> None:
    """Configure and activate a lifecycle node (no-op for plain nodes); raise
    :class:`BringUpError` with the node's reason if it refuses."""
    if isinstance(node, LifecycleNode):
        for step in (node.trigger_configure, node.trigger_activate):
            if step() != TransitionCallbackReturn.SUCCESS:
                why = getattr(node, "last_error", "") or "see the node's log"
                raise BringUpError(
                    f"{node.get_name()}: {step.__name__.removeprefix('trigger_')} failed: {why}"
                )


class Executors:
    """One executor per node, each spinning in its own thread.

    A node's ``executor_threads`` attribute (default 1) picks a multi-threaded executor (nodes
    that serve calls while a long callback runs: robot, policy) or a single-threaded one. Small
    per-node wait sets cost much less Python time per event than one executor over every node of
    the process (measured: 31 % -> 16 % of a core for the idle composed graph at 30 Hz).
    """

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.executors: list[Executor] = []
        for n in nodes:
            k = int(getattr(n, "executor_threads", 1))
            ex: Executor = (
                MultiThreadedExecutor(num_threads=k, context=n.context)
                if k > 1
                else SingleThreadedExecutor(context=n.context)
            )
            ex.add_node(n)
            self.executors.append(ex)
        self._stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._spin, args=(ex,), daemon=True) for ex in self.executors
        ]

    def _spin(self, ex: Executor) -> None:
        """``ex.spin()`` that :meth:`shutdown` can end between two iterations."""
        with contextlib.suppress(ExternalShutdownException):
            while not self._stop.is_set() and ex.context.ok():
                try:
                    ex.spin_once()
                except _rclpy.RCLError:
                    if ex.context.ok():
                        raise
                    # a SIGINT shut the context down between the check and the wait set
                    # ("the given context is not valid"): the process exits 1 instead of 0
                    return

    def start(self) -> Executors:
        for t in self.threads:
            t.start()
        return self

    def start_background(self) -> Executors:
        """Start all but the first executor; :meth:`spin_first` runs it in the calling thread."""
        for t in self.threads[1:]:
            t.start()
        return self

    def spin_first(self) -> None:
        """Spin the first executor here until the context shuts down (e.g. Ctrl-C)."""
        if self.executors:
            self._spin(self.executors[0])

    def shutdown(self) -> None:
        """End the spin loops, join their threads, then shut the executors down (no C++ thread
        may outlive the process).

        The order matters: rclpy's ``Executor.shutdown`` destroys its guard conditions at once,
        without waiting for an iteration in flight, so a thread still inside ``spin_once`` then
        used a destroyed handle (``InvalidHandle: cannot use Destroyable``, printed by every
        ``captain up`` at exit before this)."""
        self._stop.set()
        for ex in self.executors:
            with contextlib.suppress(Exception):  # a context already shut down
                ex.wake()
        for t in self.threads:
            if t.ident is not None and t.is_alive():
                t.join(10.0)
        for ex in self.executors:
            ex.shutdown(timeout_sec=5.0)


def run_nodes(
    argv: list[str] | None, factory: Callable[[], Sequence[Node]], autostart: bool = True
) -> int:
    """Process entry point: ``rclpy.init``, build ``factory()``, bring up, spin until Ctrl-C."""
    args: list[Any] = list(sys.argv if argv is None else ["captain", *argv])
    rclpy.init(args=args)
    nodes: Sequence[Node] = ()
    executors: Executors | None = None
    try:
        try:
            nodes = factory()
            if autostart:
                for n in nodes:
                    bring_up(n)
        except (BringUpError, ParameterError, CaptainError) as exc:  # one clear line, no traceback
            print(f"{Path(args[0]).name}: {exc}", file=sys.stderr, flush=True)
            return EXIT_REFUSED
        except Exception:
            if rclpy.ok():
                raise
            return 0  # a signal shut the context down while the nodes were being built (launch
            # stopping the graph): rclpy then fails to create entities; that is a stop, not a crash
        executors = Executors(nodes).start_background()
        executors.spin_first()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        for n in nodes:  # a node that runs long callbacks ends them first (the policy node)
            stop = getattr(n, "stop", None)
            if callable(stop):
                stop()
        if executors is not None:
            executors.shutdown()
        for n in nodes:
            if isinstance(n, LifecycleNode):
                with contextlib.suppress(Exception):  # already finalized
                    n.trigger_shutdown()
            n.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
