"""A process told to stop while it builds its nodes (launch shutting the graph down) exits 0
quietly: rclpy failing to create entities on the shut-down context is a stop, not a crash."""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")

import time  # noqa: E402

from rclpy.node import Node  # noqa: E402

from captain_ros.ros.runner import Executors, run_nodes  # noqa: E402


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


def test_executors_shut_down_only_after_their_spin_threads_ended() -> None:
    """rclpy's Executor.shutdown destroys its guard conditions at once; a thread still spinning
    then raised InvalidHandle (``captain up`` printed it at exit)."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    nodes = [Node("stop_probe_single", context=ctx), Node("stop_probe_multi", context=ctx)]
    try:
        nodes[1].executor_threads = 2  # type: ignore[attr-defined]
        for n in nodes:
            n.create_timer(0.001, lambda: None)
        executors = Executors(nodes).start()
        time.sleep(0.05)
        spinning_at_shutdown: list[bool] = []
        for ex in executors.executors:

            def spy(*args, _original=ex.shutdown, **kwargs):  # type: ignore[no-untyped-def]
                spinning_at_shutdown.append(any(t.is_alive() for t in executors.threads))
                return _original(*args, **kwargs)

            ex.shutdown = spy  # type: ignore[method-assign]
        executors.shutdown()
        assert spinning_at_shutdown == [False, False]
    finally:
        for n in nodes:
            n.destroy_node()
        ctx.try_shutdown()
