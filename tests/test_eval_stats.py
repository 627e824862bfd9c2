"""Evaluation statistics against known published values."""

import numpy as np
import pytest

from captain_ros.evaluation.stats import describe, mcnemar, mcnemar_exact_p, wilson_interval


def test_wilson_matches_newcombe_1998_examples():
    # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (Wilson score).
    p = wilson_interval(81, 263)
    assert p.low == pytest.approx(0.2553, abs=1e-4)
    assert p.high == pytest.approx(0.3662, abs=1e-4)
    p = wilson_interval(15, 148)
    assert (p.low, p.high) == pytest.approx((0.0624, 0.1605), abs=1e-4)
    p = wilson_interval(0, 20)
    assert p.low == 0.0
    assert p.high == pytest.approx(0.1611, abs=1e-4)
    p = wilson_interval(1, 29)
    assert (p.low, p.high) == pytest.approx((0.0061, 0.1718), abs=1e-4)


def test_wilson_edges_and_symmetry():
    assert wilson_interval(0, 0).low == 0.0 and wilson_interval(0, 0).high == 1.0
    full = wilson_interval(10, 10)
    assert full.high == 1.0 and full.low == pytest.approx(0.7225, abs=1e-4)
    a, b = wilson_interval(3, 17), wilson_interval(14, 17)
    assert a.low == pytest.approx(1 - b.high) and a.high == pytest.approx(1 - b.low)
    assert wilson_interval(5, 10, confidence=0.99).low < wilson_interval(5, 10).low
    with pytest.raises(ValueError):
        wilson_interval(5, 4)


def test_mcnemar_exact_known_values():
    # b=1, c=6: 2 * (1 + 7) / 128 = 0.125
    assert mcnemar_exact_p(1, 6) == pytest.approx(0.125)
    # b=0, c=5: 2 / 32
    assert mcnemar_exact_p(0, 5) == pytest.approx(0.0625)
    # Fagerland et al. (2013) BMC Med Res Methodol 13:91 example: b=2, c=8 -> 0.109
    assert mcnemar_exact_p(2, 8) == pytest.approx(0.1094, abs=1e-4)
    assert mcnemar_exact_p(3, 3) == 1.0
    assert mcnemar_exact_p(0, 0) == 1.0
    assert mcnemar_exact_p(8, 2) == mcnemar_exact_p(2, 8)


def test_mcnemar_matches_scipy_binomtest_on_random_pairs():
    from scipy.stats import binomtest

    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.random(30) < 0.6
        b = rng.random(30) < 0.4
        m = mcnemar(list(a), list(b))
        assert m.both + m.only_a + m.only_b + m.neither == 30
        n = m.only_a + m.only_b
        ref = binomtest(m.only_a, n, 0.5).pvalue if n else 1.0
        assert m.p_value == pytest.approx(ref, rel=1e-9)


def test_describe_quantiles_match_numpy():
    xs = [5.0, 1.0, 3.0, 9.0, 7.0, 2.0]
    d = describe(xs)
    assert d["median"] == pytest.approx(np.median(xs))
    assert d["p95"] == pytest.approx(np.percentile(xs, 95))
    assert d["mean"] == pytest.approx(np.mean(xs))
    assert describe([])["n"] == 0
