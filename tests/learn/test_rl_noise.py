"""Appendix H's gradient-noise scale: estimator, sketch, and per-episode sketches of the update."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from test_rl_update_lora import _sample, tiny_lora  # noqa: E402

from captain_ros.learn.rl import GradientSketch, PolicyUpdater, UpdateConfig, simple_noise_scale  # noqa: E402

pytestmark = pytest.mark.learn
torch.set_num_threads(1)


def test_noise_scale_recovers_a_known_ratio():
    rng = np.random.default_rng(0)
    d, sigma = 200, 0.5
    g_true = np.full(d, 0.05)  # |G|^2 = 200 * 0.0025 = 0.5
    grads = g_true + rng.normal(0, sigma, size=(4000, d))  # tr(Sigma) = 200 * 0.25 = 50
    ns = simple_noise_scale(grads, bootstrap=100)
    assert ns.trace_sigma == pytest.approx(50, rel=0.03)
    assert ns.g2 == pytest.approx(0.5, rel=0.1)
    assert ns.b_noise == pytest.approx(100, rel=0.12)
    assert ns.lower_95 < ns.b_noise
    pure_noise = simple_noise_scale(rng.normal(0, 1, size=(50, 20)), bootstrap=0)
    assert pure_noise.b_noise > 50 or pure_noise.b_noise == float("inf")
    with pytest.raises(ValueError):
        simple_noise_scale(np.zeros((1, 3)))


def test_count_sketch_preserves_inner_products_on_average():
    params = [torch.nn.Parameter(torch.zeros(3000)), torch.nn.Parameter(torch.zeros(2000))]
    a, b = torch.randn(5000), torch.randn(5000)
    b = 0.6 * a + 0.8 * b
    dots = []
    for seed in range(30):
        sk = GradientSketch(params, dim=512, seed=seed)
        dots.append(float(sk.of_vector(a) @ sk.of_vector(b)))
    assert np.mean(dots) == pytest.approx(float(a @ b), rel=0.1)


def test_update_records_each_episodes_gradient_sketch():
    model = tiny_lora(7)
    rng = np.random.default_rng(7)
    upd = PolicyUpdater(model, UpdateConfig(accumulation_rounds=2), sketch_dim=256)
    s1, s2 = _sample(model, rng, eid="a"), _sample(model, rng, eid="b")
    adv = {"a": {1: 1.0, 2: -1.0, 3: 0.5}, "b": {1: -0.5, 2: 1.0, 3: 1.0}}
    upd.accumulate_round([s1, s2], adv)
    sk = upd.episode_sketches
    assert set(sk) == {"a", "b"}
    # gradients add up: the scaled per-episode sketches sum to the sketch of .grad
    scale = 1.0 / (2 * 2)
    assert np.allclose((sk["a"] + sk["b"]) * scale, upd.sketch.of_grads(), atol=1e-10)
    assert not np.allclose(sk["a"], sk["b"])
