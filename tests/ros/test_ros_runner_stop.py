"""A process told to stop while it builds its nodes (launch shutting the graph down) exits 0
quietly: rclpy failing to create entities on the shut-down context is a stop, not a crash."""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")

from captain_ros.ros.runner import run_nodes  # noqa: E402


def test_a_shutdown_during_construction_is_a_quiet_stop(capsys: pytest.CaptureFixture[str]) -> None:
    def factory():
        rclpy.shutdown()  # what the SIGINT handler does
        raise ValueError("Failed to create action server: rcl node's context is invalid")

    assert run_nodes([], factory) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_an_error_while_the_context_is_up_still_raises() -> None:
    def factory():
        raise ValueError("a real bug")

    with pytest.raises(ValueError, match="a real bug"):
        run_nodes([], factory)
