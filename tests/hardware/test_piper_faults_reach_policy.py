"""Issue 36: a hardware fault reaches the policy as a failed Result with a hardware or e-stop
category and its cause in words, never ``internal_error`` or a traceback; the operator's log gets
one line per fault. The faults are injected into the PiPER CAN emulator under the unmodified
piper_sdk, and the calls go through the policy-facing RobotService (motion layer, safety layer)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from captain_ros.api.service import RobotService
from captain_ros.core.errors import HardwareError
from captain_ros.core.failures import failure_from_exception
from captain_ros.core.result import FailureCategory
from captain_ros.motion import MotionService


def _wait(cond: Callable[[], bool], timeout_s: float = 2.0) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, "the emulator did not report the injected fault"
        time.sleep(0.01)


def _service(piper: Any) -> RobotService:
    return RobotService(piper, motion=MotionService(piper))


def _fault_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_hardware_error_is_a_hardware_failure_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    exc = HardwareError(
        "arm: joint feedback is stale (1028 ms old, limit 100 ms); nothing was commanded"
    )
    r = failure_from_exception(exc, "move_to", physical=True)
    assert not r.success and r.failure_category == FailureCategory.HARDWARE
    assert r.message.startswith("move_to: arm: joint feedback is stale (1028 ms old")
    assert "operator must check the arm" in r.message and "internal error" not in r.message
    (line,) = _fault_lines(caplog)
    assert line.exc_info is None and "stale" in line.getMessage()  # one line, no traceback


@pytest.mark.slow
def test_stale_feedback_reaches_the_policy_as_hardware(
    piper: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    svc = _service(piper)
    here = [float(v) for v in piper.ee_pose("arm").position_m]
    piper.emulator.drop_feedback("arm", 1.0)
    time.sleep(0.3)
    r = svc.call("move_to", {"position": here, "arm": "arm"})
    assert not r.success and r.failure_category == FailureCategory.HARDWARE, r
    assert "joint feedback is stale" in r.message and "nothing was commanded" in r.message
    assert not piper.estopped  # nothing was under way: refused, not latched
    (line,) = _fault_lines(caplog)
    assert line.exc_info is None and "hardware fault in move_to" in line.getMessage()


@pytest.mark.slow
def test_a_motor_that_drops_out_is_named(piper: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    piper.emulator.disable_motor("arm", 3)
    _wait(lambda: piper.link_status("arm").disabled_motors == (3,))
    r = _service(piper).call("move_to", {"jaw": 0.03})
    assert not r.success and r.failure_category == FailureCategory.HARDWARE, r
    assert "motors are not enabled (motor J3 disabled)" in r.message
    (line,) = _fault_lines(caplog)
    assert line.exc_info is None and "J3 disabled" in line.getMessage()


@pytest.mark.slow
def test_over_current_latches_the_estop_with_its_cause(
    piper: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    svc = _service(piper)
    piper.emulator.over_current("arm", 2)
    _wait(lambda: "J2 over-current" in piper.link_status("arm").faults)
    x, y, z = (float(v) for v in piper.ee_pose("arm").position_m)
    target = [x, y, z + 0.02]
    r = svc.call("move_to", {"position": target, "arm": "arm"})
    assert not r.success and r.failure_category == FailureCategory.ESTOP, r
    assert "guard:current" in r.message and "J2 over-current" in r.message
    assert piper.estopped
    again = svc.call("move_to", {"jaw": 0.03})  # held: refused, no second log line
    assert again.failure_category == FailureCategory.ESTOP
    (line,) = _fault_lines(caplog)
    assert line.exc_info is None and "e-stop latched by guard:current" in line.getMessage()
