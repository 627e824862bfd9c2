"""The tests' graph probe (RosCli.wait_for) against a wedged ros2 daemon.

CI saw `ros2 action list` block for 60 s while a launch came up (stop 42): every CLI verb on a
domain goes through that domain's ros2 daemon, and one that accepts connections but never
answers blocks them all (ros2cli #610). A stopped (SIGSTOP) daemon is exactly that: the kernel
still accepts its XML-RPC connections.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ros_cli import RosCli, cli_env, require_ros2_cli

pytestmark = [pytest.mark.ros, pytest.mark.slow]


@pytest.fixture
def wedged(tmp_path: Path) -> Iterator[tuple[RosCli, int]]:
    """A CLI on a test domain whose ros2 daemon is stopped (SIGSTOP), and that daemon's pid."""
    require_ros2_cli()
    cli = RosCli(cli_env(35 + os.getpid() % 5), tmp_path)
    try:
        cli.run("daemon", "start", timeout_s=60.0)
        pids = cli.daemon_pids()
        assert len(pids) == 1, pids
        os.kill(pids[0], signal.SIGSTOP)
        yield cli, pids[0]
    finally:
        cli.kill_daemon()


def test_wait_for_outlives_a_wedged_daemon(wedged: tuple[RosCli, int]) -> None:
    cli, pid = wedged
    t0 = time.monotonic()
    cli.wait_for("topic", "/rosout", timeout_s=120.0, probe_timeout_s=10.0)
    assert time.monotonic() - t0 >= 10.0  # the first probe hung on the stopped daemon
    assert pid not in cli.daemon_pids()  # killed; a fresh one answered
    assert cli.daemon_pids()
    cli.stop_all()
    assert not cli.daemon_pids()


def test_wait_for_names_the_hung_probes_when_it_gives_up(wedged: tuple[RosCli, int]) -> None:
    cli, _ = wedged
    with pytest.raises(AssertionError, match=r"/no_such_action did not appear .*probes hung"):
        cli.wait_for("action", "/no_such_action", timeout_s=20.0, probe_timeout_s=5.0)
    cli.stop_all()
    assert not cli.daemon_pids()


def test_stop_all_kills_a_wedged_daemon_and_says_so(wedged: tuple[RosCli, int]) -> None:
    """A wedged daemon that outlived its test would block the next test on the domain."""
    cli, _ = wedged
    with pytest.warns(UserWarning, match=r"`ros2 daemon stop` hung for 5.0 s on domain 3\d"):
        cli.stop_all(daemon_stop_s=5.0)
    assert not cli.daemon_pids()
