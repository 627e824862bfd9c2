"""Fixtures and helpers for the ROS tests: per-test ROS domain, logs inside the build tree, real nodes.

Every test gets its own ``ROS_DOMAIN_ID`` (in-process through ``rclpy.init(domain_id=...)`` on a
private context; child processes through their environment), so tests never see each other's
graphs. Logs and the Fast DDS fast-discovery profile live under ``build/ros-tests``. Children are
started with ``subprocess`` (fork + exec), never ``multiprocessing`` fork after ``rclpy.init``.
Waiting is always on the ROS graph (``wait_for_service``, subscription counts, futures), never on
sleeps.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from captain_ros.ros.env import apply_ros_environment, ros_environment

ROOT = Path(__file__).resolve().parents[2]
STATE_DIR = ROOT / "build" / "ros-tests"
_domains = itertools.count()


def _next_domain() -> int:
    # 1..100 spread by pid so concurrent pytest processes rarely collide.
    return 1 + (os.getpid() * 13 + next(_domains)) % 100


@pytest.fixture(scope="session", autouse=True)
def _ros_process_env() -> None:
    apply_ros_environment(STATE_DIR)


@pytest.fixture
def domain_id() -> int:
    return _next_domain()


@pytest.fixture
def ros_context(domain_id: int) -> Iterator[object]:
    """A private rclpy context on this test's domain."""
    import rclpy

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain_id)
    yield ctx
    ctx.try_shutdown()


class Spinner:
    """Spins nodes on a multi-threaded executor in a background thread."""

    def __init__(self, context: object) -> None:
        from rclpy.executors import MultiThreadedExecutor

        self.executor = MultiThreadedExecutor(num_threads=6, context=context)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._started = False

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException

        with contextlib.suppress(ExternalShutdownException):
            self.executor.spin()

    def add(self, *nodes: object) -> None:
        for n in nodes:
            self.executor.add_node(n)
        if not self._started:
            self._thread.start()
            self._started = True

    def shutdown(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)


@pytest.fixture
def spinner(ros_context: object) -> Iterator[Spinner]:
    s = Spinner(ros_context)
    yield s
    s.shutdown()


def wait_until(
    predicate: Callable[[], bool],
    timeout_s: float,
    event: threading.Event | None = None,
    what: str = "condition",
) -> None:
    """Wait for ``predicate`` driven by ``event`` (set by callbacks); fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    ev = event or threading.Event()
    while not predicate():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        ev.wait(min(remaining, 0.05))
        ev.clear()


class ChildProcess:
    """A Python child process on this test's ROS domain (logs in the build tree)."""

    def __init__(self, args: list[str], domain_id: int, log_name: str) -> None:
        env = ros_environment(STATE_DIR, domain_id)
        env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)  # let the venv's bootstrap set LD paths
        self.log_path = STATE_DIR / "children" / f"{log_name}-{domain_id}-{os.getpid()}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, *args],
            env=env,
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def stop(self, sig: int = signal.SIGINT, timeout_s: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode


@pytest.fixture
def child_process(domain_id: int) -> Iterator[Callable[..., ChildProcess]]:
    started: list[ChildProcess] = []

    def start(args: list[str], log_name: str = "child") -> ChildProcess:
        c = ChildProcess(args, domain_id, log_name)
        started.append(c)
        return c

    yield start
    for c in started:
        c.stop()
