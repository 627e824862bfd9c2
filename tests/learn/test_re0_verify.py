"""Paired verification: escalation, no post-selection, false-admission rate and power."""

import math

import numpy as np
import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.re0 import ESCALATION, PairedDraw, VerifierConfig, decide, verify


def _constant_sampler(teacher: float, student: float, calls: list):
    def sample(first, count):
        calls.append((first, count))
        return [PairedDraw("scripted", xi, teacher, student) for xi in range(first, first + count)]

    return sample


def test_escalation_schedule_8_12_16_24_32_48_until_insufficient():
    calls: list = []
    v = verify(_constant_sampler(0.5, 0.5, calls), 0.05, VerifierConfig())
    assert ESCALATION == (8, 12, 16, 24, 32, 48)
    assert calls == [(0, 8), (8, 4), (12, 4), (16, 8), (24, 8), (32, 16)]
    assert v.verdict == "insufficient" and not v.admitted
    assert v.looks == ESCALATION and v.rollouts_spent == 96 and v.delta_hat == 0.0


def test_clear_improvement_is_admitted_at_the_first_look_with_betting():
    calls: list = []
    v = verify(_constant_sampler(1.0, 0.0, calls), 0.05, VerifierConfig())
    # x_i = 1, null m0 = 1/2, bets capped at 1: E_8 = 1.5^8 = 25.6 >= 1/alpha = 20
    assert calls == [(0, 8)] and v.verdict == "admitted" and v.admitted
    assert math.exp(v.log_e_value) == pytest.approx(1.5**8)
    assert v.lcb > 0 and v.rollouts_spent == 16


def test_hoeffding_splits_alpha_over_the_looks_and_admits_at_12():
    calls: list = []
    v = verify(_constant_sampler(1.0, 0.0, calls), 0.05, VerifierConfig(method="hoeffding"))
    # alpha per look = 0.05 / 6: radius sqrt(2 ln 240 / 8) = 1.1705 at M = 8 (undecided),
    # sqrt(2 ln 240 / 12) = 0.9557 at M = 12 -> LCB = 0.0443 > 0
    assert calls == [(0, 8), (8, 4)]
    assert v.radius == pytest.approx(0.9557405, abs=1e-6)
    assert v.lcb == pytest.approx(1 - 0.9557405, abs=1e-6) and v.verdict == "admitted"


def test_harmful_repair_is_rejected():
    v = verify(_constant_sampler(0.0, 1.0, []), 0.05, VerifierConfig())
    assert v.verdict == "rejected" and v.ucb <= 0


def _two_candidates(first, count):
    out = []
    for xi in range(first, first + count):
        out += [PairedDraw("good", xi, 1.0, 0.0), PairedDraw("bad", xi, -1.0, 0.0)]
    return out


def test_candidates_are_averaged_never_post_selected():
    cfg = VerifierConfig(candidates="reused", return_bound=1.0)
    v = verify(_two_candidates, 0.05, cfg)
    # the good candidate alone would be admitted; the mean over both is 0
    assert v.delta_hat == 0.0 and not v.admitted
    assert v.candidates == ("bad", "good")
    assert v.rollouts_spent == 2 * 48 + 48  # (K + 1) x M


def test_reused_candidates_pay_the_outer_layer():
    def good(f, n):
        return [PairedDraw(c, xi, 1.0, 0.0) for xi in range(f, f + n) for c in ("a", "b")]

    h = verify(good, 0.05, VerifierConfig(method="hoeffding", candidates="reused"))
    # K = 2: the candidate layer alone is sqrt(2 ln(2 / (0.05/12)) / 2) = 2.48 > 1: never admitted
    assert h.verdict == "insufficient" and h.radius > 2.4
    b = verify(good, 0.05, VerifierConfig(method="betting", candidates="reused"))
    assert not b.admitted


def test_decide_validates_the_pair_structure():
    cfg = VerifierConfig()
    two_per_xi = [PairedDraw("a", 0, 1, 0), PairedDraw("b", 0, 1, 0)]
    with pytest.raises(InvalidArgumentError, match="fresh candidates"):
        decide(two_per_xi, 0.05, cfg)
    with pytest.raises(InvalidArgumentError, match="return bound"):
        decide([PairedDraw("a", 0, 1.0, -1.0)], 0.05, cfg)
    with pytest.raises(InvalidArgumentError):
        VerifierConfig(method="bayes")
    with pytest.raises(InvalidArgumentError):
        VerifierConfig(schedule=(12, 8))
    with pytest.raises(InvalidArgumentError, match="must return the draws"):
        verify(lambda f, n: [PairedDraw("a", 0, 1, 0)] * n, 0.05, cfg)


def _bernoulli_sampler(rng, p_teacher, p_student, rho):
    """Shared randomness: both arms read the same uniform with probability rho."""

    def sample(first, count):
        out = []
        for xi in range(first, first + count):
            u = rng.uniform()
            u2 = u if rng.uniform() < rho else rng.uniform()
            out.append(PairedDraw("t", xi, float(u < p_teacher), float(u2 < p_student)))
        return out

    return sample


@pytest.mark.parametrize("method", ["betting", "hoeffding"])
def test_false_admission_rate_within_alpha_when_delta_is_zero(method):
    rng = np.random.default_rng(7)
    n, admitted = 300, 0
    for i in range(n):
        p = (0.2, 0.5, 0.8)[i % 3]
        v = verify(_bernoulli_sampler(rng, p, p, 0.7), 0.05, VerifierConfig(method=method))
        admitted += v.admitted
    # alpha = 0.05: expected <= 15 of 300; allow 3 binomial standard deviations of slack
    assert admitted <= 0.05 * n + 3 * math.sqrt(n * 0.05 * 0.95)


def test_power_when_the_teacher_is_better():
    rng = np.random.default_rng(8)
    res = [
        verify(_bernoulli_sampler(rng, 0.9, 0.3, 0.7), 0.05, VerifierConfig()) for _ in range(60)
    ]
    assert sum(v.admitted for v in res) >= 54
    assert np.mean([v.rollouts_spent for v in res if v.admitted]) < 2 * 24


def test_incremental_looks_equal_recomputing_every_look():
    rng = np.random.default_rng(3)
    draws = _bernoulli_sampler(rng, 0.6, 0.4, 0.5)(0, 48)
    prev = None
    for m in ESCALATION:
        prev = decide(draws[:m], 0.05, VerifierConfig(), prior=prev)
        full = decide(draws[:m], 0.05, VerifierConfig())
        assert prev.lcb == pytest.approx(full.lcb, abs=1e-12)
        assert prev.ucb == pytest.approx(full.ucb, abs=1e-12)
