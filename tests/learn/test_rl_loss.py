"""The policy loss of eq. 8 and the request sampling, against hand-computed numbers."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from captain_ros.core.errors import InvalidArgumentError  # noqa: E402
from captain_ros.learn.errors import StaleRolloutError  # noqa: E402
from captain_ros.learn.rl import (  # noqa: E402
    LossConfig,
    check_staleness,
    masked_policy_loss,
    sample_requests,
    segment_sample,
    token_weights,
)

pytestmark = pytest.mark.learn
torch.set_num_threads(1)


def _example():
    # ratios pi/pi_old: 0.5/0.5 = 1 (kept), 0.05/0.5 = 0.1 (dropped), 0.9/0.5 = 1.8 (kept),
    # 0.5/0.1 = 5 (dropped)
    new = torch.log(torch.tensor([0.5, 0.05, 0.9, 0.5], dtype=torch.float64)).requires_grad_()
    old = torch.log(torch.tensor([0.5, 0.5, 0.5, 0.1], dtype=torch.float64))
    ref = torch.log(torch.tensor([0.4, 0.5, 0.6, 0.5], dtype=torch.float64))
    adv = torch.tensor([1.0, 1.0, -0.5, -0.5], dtype=torch.float64)  # request 1, request 2
    w = torch.tensor([2.0, 2.0, 1.0, 1.0], dtype=torch.float64)  # inclusion weights
    return new, old, ref, adv, w


def test_ratio_mask_ratio_weight_and_k3_kl_by_hand():
    new, old, ref, adv, w = _example()
    out = masked_policy_loss(new, old, ref, adv, w, torch.ones(4, dtype=torch.bool))
    # policy: -(2 * 1 * 1 + 1 * 1.8 * -0.5) = -1.1
    assert out.policy_term == pytest.approx(-1.1)
    # k3 = e^d - d - 1, d = log(ref/new): token 1 d = ln 0.8 -> 0.0231436 ; token 3 d = ln(2/3)
    k1 = 0.8 - math.log(0.8) - 1
    k3 = 2 / 3 - math.log(2 / 3) - 1
    assert (k1, k3) == (pytest.approx(0.0231436, abs=1e-7), pytest.approx(0.0721318, abs=1e-7))
    assert out.kl_term == pytest.approx(2 * k1 + k3)
    assert float(out.loss.detach()) == pytest.approx(-1.1 + 0.002 * (2 * k1 + k3))
    assert out.kept_tokens == 2 and out.tokens == 4 and out.kept_fraction == 0.5
    assert out.kl_mean == pytest.approx((k1 + k3) / 2)
    out.loss.backward()
    # d loss / d logp_new = -w r A + beta w (1 - exp(ref - new)) on kept tokens, 0 on dropped
    g = new.grad.tolist()
    assert g[0] == pytest.approx(-2 * 1 * 1 + 0.002 * 2 * (1 - 0.8))
    assert g[2] == pytest.approx(-1 * 1.8 * -0.5 + 0.002 * 1 * (1 - 2 / 3))
    assert g[1] == 0.0 and g[3] == 0.0


def test_mask_bounds_are_strict_and_beta_is_the_papers():
    cfg = LossConfig()
    assert (cfg.ratio_low, cfg.ratio_high, cfg.beta) == (0.2, 4.0, 0.002)
    new = torch.log(torch.tensor([0.2, 0.8, 0.21], dtype=torch.float64))
    old = torch.log(torch.tensor([1.0, 0.2, 1.0], dtype=torch.float64))  # ratios 0.2, 4, 0.21
    z = torch.zeros(3, dtype=torch.float64)
    out = masked_policy_loss(new, old, new, z + 1, z + 1, torch.ones(3, dtype=torch.bool))
    assert out.kept_tokens == 1  # 0.2 and 4 are outside the open interval


def test_drifted_tokens_give_no_nan_gradient():
    new = torch.tensor([0.0, -1.0], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([-200.0, -1.0], dtype=torch.float64)  # ratio e^200 on token 1
    out = masked_policy_loss(
        new,
        old,
        new.detach() - 500,
        torch.ones(2, dtype=torch.float64),
        torch.ones(2, dtype=torch.float64),
        torch.ones(2, dtype=torch.bool),
    )
    out.loss.backward()
    assert torch.isfinite(out.loss) and torch.isfinite(new.grad).all()
    assert new.grad[0] == 0.0 and out.kept_tokens == 1


def test_ungenerated_tokens_are_ignored():
    new, old, ref, adv, w = _example()
    mask = torch.tensor([True, False, False, False])
    out = masked_policy_loss(new, old, ref, adv, w, mask)
    assert out.tokens == 1 and out.policy_term == pytest.approx(-2.0)


def test_at_most_8_requests_uniformly_with_inverse_inclusion_weights():
    rng = np.random.default_rng(0)
    s = sample_requests(range(1, 21), rng)
    assert len(s) == 8 and set(s.values()) == {20 / 8}
    assert sample_requests([1, 2, 3], rng) == {1: 1.0, 2: 1.0, 3: 1.0}
    # unbiased: E[sum over sampled of w_t x_t] = sum_t x_t
    x = np.arange(1.0, 21.0) ** 2
    est = [
        sum(w * x[t - 1] for t, w in sample_requests(range(1, 21), rng).items())
        for _ in range(20000)
    ]
    assert np.mean(est) == pytest.approx(x.sum(), rel=0.01)
    counts = np.zeros(20)
    for _ in range(4000):
        for t in sample_requests(range(1, 21), rng):
            counts[t - 1] += 1
    assert counts.min() / 4000 > 0.36 and counts.max() / 4000 < 0.44  # 8/20 = 0.4 each


def test_segment_sample_builds_one_append_only_sequence():
    s = segment_sample(
        "ep",
        prompts=[[1, 2, 3], [1, 2, 3, 7, 8, 9, 4]],
        completions=[[7, 8], [5]],
        completion_logprobs=[[-0.1, -0.2], [-0.3]],
        policy_version=3,
    )
    assert s.input_ids.tolist() == [1, 2, 3, 7, 8, 9, 4, 5]
    assert s.request_of_token.tolist() == [0, 0, 0, 1, 1, 0, 0, 2]
    assert s.old_logprobs.tolist() == [0, 0, 0, -0.1, -0.2, 0, 0, -0.3]
    assert s.requests == (1, 2)
    adv, w = token_weights(s, {1: 0.5, 2: -1.0}, {2: 2.0})
    assert adv.tolist() == [0, 0, 0, 0, 0, 0, 0, -1.0] and w.tolist() == [0] * 7 + [2.0]
    with pytest.raises(InvalidArgumentError, match="does not extend"):
        segment_sample("ep", [[1, 2], [1, 9]], [[3], [4]], [[-0.1], [-0.1]], 0)
    with pytest.raises(InvalidArgumentError, match="log-probs"):
        segment_sample("ep", [[1, 2]], [[3]], [[-0.1, -0.2]], 0)
    with pytest.raises(InvalidArgumentError, match="finite <= 0"):
        segment_sample("ep", [[1, 2]], [[3]], [[0.5]], 0)


def test_staleness_at_most_two_versions():
    check_staleness(5, 7, 2)
    with pytest.raises(StaleRolloutError, match="3 versions old"):
        check_staleness(4, 7, 2)
    with pytest.raises(StaleRolloutError, match="newer"):
        check_staleness(8, 7, 2)
