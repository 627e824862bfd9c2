"""The critic ensemble, its inputs, its folder, and the held-out metrics by hand."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from captain_ros.core.errors import InvalidArgumentError  # noqa: E402
from captain_ros.learn.critic import Critic, EnsembleMLP, InputSpec, check_feature_names  # noqa: E402
from captain_ros.learn.critic.metrics import auc, brier, ece, within_group_auc  # noqa: E402
from captain_ros.learn.critic.synthetic import synthetic_episodes  # noqa: E402
from captain_ros.learn.errors import CriticFolderError  # noqa: E402
from captain_ros.tasks.features import FEATURE_NAMES  # noqa: E402

pytestmark = pytest.mark.learn
torch.set_num_threads(1)


def test_five_members_of_three_hidden_layers_of_256_logits_averaged():
    m = EnsembleMLP(43, seed=1)
    assert [tuple(w.shape) for w in m.weights] == [
        (5, 43, 256),
        (5, 256, 256),
        (5, 256, 256),
        (5, 256, 1),
    ]
    x = torch.randn(7, 43)
    per = []
    for k in range(5):  # the same maths as five separate MLPs
        h = x
        for i, (w, b) in enumerate(zip(m.weights, m.biases, strict=True)):
            h = h @ w[k] + b[k]
            h = torch.relu(h) if i < 3 else h
        per.append(h.squeeze(-1))
    per = torch.stack(per)
    assert torch.allclose(m.member_logits(x), per, atol=1e-5)
    assert torch.allclose(m(x), per.mean(0), atol=1e-5)
    assert not torch.allclose(per[0], per[1])  # members initialised independently


def test_value_is_the_sigmoid_of_the_mean_logit():
    eps = synthetic_episodes(3, seed=1)
    c = Critic.for_episodes(eps, FEATURE_NAMES, seed=0)
    e = eps[0]
    t = np.arange(1, e.n_requests + 1)
    v = c.values(e.features[:-1], t, [e.task] * e.n_requests)
    z = c.model.member_logits(
        torch.from_numpy(c.spec.encode(e.features[:-1], t, [e.task] * e.n_requests))
    )
    assert v == pytest.approx(torch.sigmoid(z.mean(0)).detach().numpy().astype(float), abs=1e-6)


def test_episode_values_use_the_same_t_for_the_next_state():
    eps = synthetic_episodes(2, seed=2)
    c = Critic.for_episodes(eps, FEATURE_NAMES)
    e = eps[0]
    ev = c.episode_values([e])[e.episode_id]
    n = e.n_requests
    t = np.arange(1, n)
    expect_next = c.values(e.features[1:n], t, [e.task] * (n - 1))  # V(s_{t+1}, t)
    assert ev.v_next == pytest.approx(expect_next)
    shifted = c.values(e.features[1:n], t + 1, [e.task] * (n - 1))  # V(s_{t+1}, t+1): not used
    assert not np.allclose(ev.v_next, shifted)
    assert ev.critic_version == c.version


def test_no_policy_behaviour_counters_among_the_inputs():
    check_feature_names(FEATURE_NAMES)
    for bad in ("n_perception_calls", "failed_calls", "request_index", "tokens_so_far"):
        with pytest.raises(InvalidArgumentError, match="policy-behaviour counters"):
            check_feature_names((*FEATURE_NAMES, bad))
    with pytest.raises(InvalidArgumentError):
        InputSpec((*FEATURE_NAMES, "n_retries"), ("t",), np.zeros(38), np.ones(38))


def test_input_encoding_standardises_x_and_t_and_one_hots_the_task():
    spec = InputSpec(
        ("a_m", "b_m"),
        ("pick_place", "stack"),
        np.array([1.0, 2.0, 10.0]),
        np.array([2.0, 1.0, 5.0]),
    )
    z = spec.encode(np.array([[3.0, 2.0]]), np.array([20]), ["stack"])
    assert z.tolist() == [[1.0, 0.0, 2.0, 0.0, 1.0]]
    assert spec.encode(np.array([[3.0, 2.0]]), np.array([20]), ["unknown"])[0, 3:].tolist() == [
        0,
        0,
    ]


def test_critic_folder_round_trip_and_refusals(tmp_path):
    eps = synthetic_episodes(3, seed=3)
    c = Critic.for_episodes(eps, FEATURE_NAMES, seed=4)
    c.version = 7
    c.save(tmp_path / "critic")
    d = Critic.load(tmp_path / "critic", FEATURE_NAMES)
    assert d.version == 7 and d.spec.tasks == c.spec.tasks
    a, b = c.episode_values(eps), d.episode_values(eps)
    for k in a:
        assert np.array_equal(a[k].v_t, b[k].v_t)
    with pytest.raises(CriticFolderError, match="different features"):
        Critic.load(tmp_path / "critic", FEATURE_NAMES[:-1])
    with pytest.raises(CriticFolderError, match="model.safetensors is missing"):
        (tmp_path / "half").mkdir()
        (tmp_path / "half" / "critic.json").write_text("{}")
        Critic.load(tmp_path / "half")
    meta = json.loads((tmp_path / "critic" / "critic.json").read_text())
    meta["format"] = "other/9"
    (tmp_path / "critic" / "critic.json").write_text(json.dumps(meta))
    with pytest.raises(CriticFolderError, match="format"):
        Critic.load(tmp_path / "critic")
    (tmp_path / "critic" / "critic.json").write_text("{not json")
    with pytest.raises(CriticFolderError, match="unreadable"):
        Critic.load(tmp_path / "critic")


def test_metrics_by_hand():
    s = np.array([0.9, 0.8, 0.4, 0.3, 0.6])
    y = np.array([1, 0, 1, 0, 0])
    # positive/negative pairs: (0.9 > 0.8, 0.3, 0.6) 3 ; (0.4 > 0.3 only) 1 -> 4 of 6
    assert auc(s, y) == pytest.approx(4 / 6)
    assert auc(np.array([0.5, 0.5]), np.array([1, 0])) == 0.5  # ties count 1/2
    assert np.isnan(auc(s, np.ones(5)))
    # groups: A = {0.9+, 0.8-} correct ; B = {0.4+, 0.3-, 0.6-} 1 of 2 ; pooled 2 of 3
    w, used, pairs = within_group_auc(s, y, ["A", "A", "B", "B", "B"])
    assert (w, used, pairs) == (pytest.approx(2 / 3), 2, 3)
    assert brier(s, y) == pytest.approx(np.mean((s - y) ** 2))
    # bins: [0.3,0.4) {0.3:0}, [0.4,0.5) {0.4:1}, [0.6,0.7) {0.6:0}, [0.8,0.9) {0.8:0}, [0.9,1] {0.9:1}
    assert ece(s, y) == pytest.approx((0.3 + 0.6 + 0.6 + 0.8 + 0.1) / 5)
    assert ece(np.array([0.25, 0.25, 0.25, 0.25]), np.array([1, 0, 0, 0])) == pytest.approx(0.0)


def test_a_column_constant_at_warm_start_is_only_centred():
    x = np.zeros((4, 2))
    x[:, 0] = [0.1, 0.2, 0.3, 0.4]
    spec = InputSpec.fit(("a_m", "b_m"), ("stack",), x, np.arange(1, 5))
    assert spec.std[1] == 1.0
    z = spec.encode(np.array([[0.25, 0.3]]), np.array([2]), ["stack"])
    assert z[0, 1] == pytest.approx(0.3)
