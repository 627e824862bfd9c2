"""Drive the graph as a ROS user does: the real ``ros2`` CLI and ``ros2 launch`` (from
../shared/ros2-tools, installed into the venv by scripts/setup.sh), in child processes on the
test's ROS domain. Waits poll the graph through the CLI itself (each call has its own discovery
time), never fixed sleeps.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest
from ros_fixtures import STATE_DIR

from captain_ros.ros.env import ros_environment

VENV = Path(sys.prefix)
ROS2 = VENV / "bin" / "ros2"
PROBE_TIMEOUT_S = 30.0  # one `ros2 <verb> list` answers in 1-5 s on a loaded 2-core machine


def require_ros2_cli() -> None:
    """Fail (in CI) or skip (a checkout set up without ../shared/ros2-tools) without the CLI."""
    if ROS2.exists():
        return
    why = f"{ROS2} is missing: scripts/setup.sh installs it from ../shared/ros2-tools"
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


def cli_env(
    domain_id: int, ament_prefixes: Sequence[Path] = (VENV,), python_path: Sequence[Path] = ()
) -> dict[str, str]:
    env = ros_environment(STATE_DIR, domain_id)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)  # let the venv's bootstrap set LD paths
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(str(p) for p in ament_prefixes)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in python_path)
    return env


class RosCli:
    """``ros2 <verb> ...`` on one domain with one environment."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd
        self.launched: list[tuple[subprocess.Popen[str], Path]] = []

    def run(self, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ROS2), *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def start(self, *args: str, log: Path) -> subprocess.Popen[str]:
        """A long-running ``ros2 ...`` (launch, topic echo) with its output in ``log``."""
        log.parent.mkdir(parents=True, exist_ok=True)
        fh = log.open("w")
        proc = subprocess.Popen(
            [str(ROS2), *args],
            env=self.env,
            cwd=self.cwd,
            stdout=fh,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=_take_sigint,
        )
        self.launched.append((proc, log))
        return proc

    def wait_for(
        self,
        verb: str,
        name: str,
        timeout_s: float = 120.0,
        proc: subprocess.Popen[str] | None = None,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
    ) -> None:
        """Until ``ros2 <verb> list`` shows ``name`` (fails early if ``proc`` died).

        A probe that hangs past ``probe_timeout_s`` is a wedged ros2 daemon (ros2cli #610: every
        ``list`` on the domain blocks on its XML-RPC call; CI saw one block for 60 s): the
        domain's daemon is killed, the next probe spawns a fresh one, and the wait goes on to
        its own deadline."""
        deadline = time.monotonic() + timeout_s
        hung = 0
        while (left := deadline - time.monotonic()) > 0:
            if proc is not None and proc.poll() is not None:
                raise AssertionError(
                    f"the launched process exited ({proc.returncode}) before "
                    f"{name} appeared:\n{self.log_of(proc)[-3000:]}"
                )
            try:
                out = self.run(verb, "list", timeout_s=min(probe_timeout_s, left)).stdout.split()
            except subprocess.TimeoutExpired:
                hung += 1
                self.kill_daemon()
                continue
            if name in out:
                return
        raise AssertionError(
            f"{name} did not appear in `ros2 {verb} list` within {timeout_s} s"
            + (
                f" ({hung} probes hung past {probe_timeout_s} s; the daemon was restarted)"
                if hung
                else ""
            )
        )

    def daemon_pids(self) -> list[int]:
        """The ros2 daemons serving this domain (the CLI's verbs spawn one per domain)."""
        domain = self.env.get("ROS_DOMAIN_ID", "0")
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue  # exited meanwhile
            if any("ros2cli.daemon" in a for a in argv) and _arg(argv, "--ros-domain-id") == domain:
                pids.append(int(entry.name))
        return pids

    def kill_daemon(self) -> None:
        for pid in self.daemon_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def log_of(self, proc: subprocess.Popen[str]) -> str:
        return next((p.read_text() for q, p in self.launched if q is proc), "")

    def stop_all(self, daemon_stop_s: float = 30.0) -> None:
        """SIGINT each launched process (SIGKILL after 30 s), then the domain's ros2 daemon. A
        step that overruns is a pytest warning naming it, so a slow teardown on CI says why."""
        for proc, log in self.launched:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    warnings.warn(f"the process logging to {log} ignored SIGINT for 30 s: killed",
                                  stacklevel=2)  # fmt: skip
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
        # the CLI's verbs start a ros2 daemon on this domain that outlives the test
        try:
            self.run("daemon", "stop", timeout_s=daemon_stop_s)
        except subprocess.TimeoutExpired:  # wedged: see wait_for
            warnings.warn(f"`ros2 daemon stop` hung for {daemon_stop_s} s on domain {self.env.get('ROS_DOMAIN_ID')}: "
                          "the daemon is killed", stacklevel=2)  # fmt: skip
        deadline = time.monotonic() + 10.0
        while self.daemon_pids() and time.monotonic() < deadline:
            time.sleep(0.2)  # `daemon stop` returns before the daemon has exited
        self.kill_daemon()


def _take_sigint() -> None:
    """In the child: SIGINT back to its default. A shell without job control starts background
    commands with SIGINT ignored (POSIX), which every child inherits and Python then keeps, so
    under a backgrounded `make test` `ros2 launch` ignored stop_all's SIGINT and was killed after
    30 s (10 module teardowns of one run, each 30.7 s)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _arg(argv: Sequence[str], flag: str) -> str | None:
    """The value after ``flag`` in ``argv``, if any."""
    return next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag), None)


def goal(**fields: object) -> str:
    """A RunEpisode goal in the YAML the CLI takes."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}"
