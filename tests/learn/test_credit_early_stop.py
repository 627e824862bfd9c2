"""The critic early stop and its deterministic 5% control slice."""

import subprocess
import sys
from pathlib import Path

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.credit import EARLY_STOP_OUTCOME, EARLY_STOP_RETURN, EarlyStop, unit_hash

STOP = EarlyStop()
KEYS = [f"pick_place:{s}:r{r}" for s in range(2500) for r in range(4)]
CUT_KEY = next(k for k in KEYS if not STOP.in_control_slice(k))
CONTROL_KEY = next(k for k in KEYS if STOP.in_control_slice(k))


def test_never_before_request_10():
    assert not STOP.should_stop(CUT_KEY, [0.0] * 9)
    assert STOP.should_stop(CUT_KEY, [0.0] * 10)


def test_five_consecutive_requests_after_request_5_below_002():
    high = [0.5] * 7
    assert STOP.should_stop(CUT_KEY, high + [0.01] * 5)  # requests 8..12 below
    assert not STOP.should_stop(CUT_KEY, high + [0.01] * 4)  # only four
    assert not STOP.should_stop(
        CUT_KEY, high + [0.01, 0.01, 0.02, 0.01, 0.01]
    )  # 0.02 is not < 0.02
    # values after requests 1..5 never count, however low
    assert not STOP.should_stop(CUT_KEY, [0.0] * 5 + [0.5, 0.0, 0.0, 0.0, 0.0])


def test_control_slice_is_about_5_percent_and_never_cut():
    share = STOP.control_share(KEYS)
    assert 0.04 < share < 0.06
    assert not STOP.should_stop(CONTROL_KEY, [0.0] * 30)
    assert EarlyStop(control_fraction=0.0).should_stop(CONTROL_KEY, [0.0] * 30)


def test_control_slice_is_the_same_in_another_process():
    code = (
        "from captain_ros.learn.credit import unit_hash; "
        f"print(repr(unit_hash({CUT_KEY!r}, 'captain-early-stop')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert float(out.stdout) == unit_hash(CUT_KEY, "captain-early-stop")


def test_exempt_tasks_and_settlement_constants():
    s = EarlyStop(exempt_tasks=frozenset({"insertion"}))
    assert not s.should_stop(CUT_KEY, [0.0] * 12, task="insertion")
    assert s.should_stop(CUT_KEY, [0.0] * 12, task="pick_place")
    assert EARLY_STOP_OUTCOME == "budget_exhausted" and EARLY_STOP_RETURN == -0.1


def test_bad_configuration_is_refused():
    with pytest.raises(InvalidArgumentError):
        EarlyStop(threshold=0.0)
    with pytest.raises(InvalidArgumentError):
        EarlyStop(control_fraction=1.5)
    with pytest.raises(InvalidArgumentError):
        STOP.should_stop(CUT_KEY, [float("nan")] * 10)
