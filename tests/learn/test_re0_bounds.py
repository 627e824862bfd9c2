"""RE-0 bounds: the two-layer Hoeffding radius and the betting e-process, by hand."""

import math

import numpy as np
import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.re0 import betting_bounds, hoeffding_term, split_alpha, two_layer_radius
from captain_ros.research.re0.betting import plugin_bets


def test_hoeffding_radius_by_hand():
    # R_bar sqrt(2 ln(2/alpha) / n) = sqrt(2 ln 40 / 8) = sqrt(0.922220) = 0.960323
    assert hoeffding_term(1.0, 8, 0.05) == pytest.approx(0.9603228, abs=1e-7)
    # b = 1.75 sqrt(2 ln 80 / 4) + 1.75 sqrt(2 ln 80 / 8) = 2.590369 + 1.831657
    a1, a2 = split_alpha(0.05)
    assert (a1, a2) == (0.025, 0.025)
    assert two_layer_radius(1.75, 4, 8, a1, a2) == pytest.approx(4.4220255, abs=1e-6)
    for bad in [
        dict(return_bound=0.0, n=8, alpha=0.05),
        dict(return_bound=1.0, n=0, alpha=0.05),
        dict(return_bound=1.0, n=8, alpha=1.0),
    ]:
        with pytest.raises(InvalidArgumentError):
            hoeffding_term(**bad)


def test_plugin_bets_by_hand():
    lam = plugin_bets(np.array([1.0, 1.0]), 0.05)
    # lam_1 = sqrt(2 ln 20 / (1/4 * 1 * ln 2)) ; sigma2_1 = (1/4 + (1 - 3/4)^2) / 2 = 0.15625
    assert lam[0] == pytest.approx(math.sqrt(2 * math.log(20) / (0.25 * math.log(2))))
    assert lam[1] == pytest.approx(math.sqrt(2 * math.log(20) / (0.15625 * 2 * math.log(3))))
    assert lam == pytest.approx([5.8800871, 4.1775269], abs=1e-6)


def test_e_process_capped_bets_by_hand():
    # d in [-1/2, 1/2] -> x = d + 1/2 = 1, 1, 1/2 ; null 0 -> m0 = 1/2 ; bets capped at c/m0 = 1
    b = betting_bounds(np.array([0.5, 0.5, 0.0]), bound=0.5, alpha=0.05)
    assert np.exp(b.log_e_value) == pytest.approx([1.5, 2.25, 2.25])


def test_e_process_uncapped_bet_by_hand():
    # null -0.4 -> m0 = 0.1, cap c/m0 = 5: bet 1 is min(5.880, 5) = 5 -> 1 + 5 * 0.9 = 5.5 ;
    # bet 2 is lam_2 = 4.177527 -> 1 + 4.177527 * (0 - 0.1) = 0.5822473 ; E_2 = 3.202360
    b = betting_bounds(np.array([0.5, -0.5]), bound=0.5, alpha=0.05, null=-0.4)
    assert np.exp(b.log_e_value) == pytest.approx([5.5, 3.2023602], abs=1e-6)


def test_lower_bound_crosses_null_exactly_when_e_value_reaches_one_over_alpha():
    rng = np.random.default_rng(0)
    for _ in range(40):
        d = np.clip(rng.normal(rng.uniform(-0.2, 0.6), 0.5, size=30), -1, 1)
        b = betting_bounds(d, 1.0, 0.05)
        crossed = np.maximum.accumulate(b.log_e_value) >= math.log(20)
        assert bool(b.lower[-1] > 0) == bool(crossed[-1])
        assert np.all(b.lower <= b.upper)
        assert np.all(np.diff(b.lower) >= 0) and np.all(np.diff(b.upper) <= 0)


def test_confidence_sequence_covers_the_mean_uniformly_over_time():
    rng = np.random.default_rng(1)
    misses = 0
    for _ in range(200):
        d = rng.choice([-1.0, 0.0, 1.0], size=48, p=[0.3, 0.3, 0.4])  # mean 0.1
        b = betting_bounds(d, 1.0, 0.05, times=np.array([8, 12, 16, 24, 32, 48]))
        misses += bool(np.any(b.lower > 0.1) or np.any(b.upper < 0.1))
    # two one-sided bounds at 5% each: at most 10% of sequences may miss (far fewer in practice)
    assert misses <= 20


def test_betting_refuses_bad_input():
    with pytest.raises(InvalidArgumentError):
        betting_bounds(np.array([2.0]), 1.0, 0.05)
    with pytest.raises(InvalidArgumentError):
        betting_bounds(np.array([]), 1.0, 0.05)
    with pytest.raises(InvalidArgumentError):
        betting_bounds(np.array([0.1]), 1.0, 0.0)
    with pytest.raises(InvalidArgumentError):
        betting_bounds(np.array([0.1, 0.2]), 1.0, 0.05, times=np.array([3]))
