"""The critic learns a synthetic rule; co-training keeps the before-update order."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from captain_ros.learn.credit import RunningStd, round_credit  # noqa: E402
from captain_ros.learn.critic import (  # noqa: E402
    CoTrainer,
    Critic,
    WarmStartConfig,
    bce_loss,
    evaluate,
    warm_start,
)
from captain_ros.learn.critic.synthetic import synthetic_episodes  # noqa: E402
from captain_ros.learn.errors import LearnError  # noqa: E402
from captain_ros.tasks.features import FEATURE_NAMES  # noqa: E402

pytestmark = pytest.mark.learn
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained():
    train = synthetic_episodes(150, seed=10)
    held = synthetic_episodes(50, seed=11)
    c = Critic.for_episodes(train, FEATURE_NAMES, seed=0)
    log = warm_start(c, train, WarmStartConfig(epochs=6, batch_size=512))
    return c, train, held, log


def test_critic_learns_the_synthetic_rule(trained):
    c, train, held, log = trained
    assert c.version == 1
    assert log["epoch_loss"][-1] < log["epoch_loss"][0]
    m = evaluate(c, held)
    assert m["auc"] > 0.85, m
    assert m["within_group_auc"] > 0.7, m  # ranks rollouts of one start state
    assert m["brier"] < 0.15 and m["ece"] < 0.1, m
    # after a successful placement the critic is confident; before any grasp it is not
    e = next(e for e in held if e.success)
    v = c.episode_values([e])[e.episode_id].v_t
    assert v[-1] > 0.8


def test_cotraining_uses_the_critic_from_before_the_update(trained):
    c0, train, held, _ = trained
    c = Critic(c0.spec, seed=0, version=c0.version)
    c.model.load_state_dict(c0.model.state_dict())
    ct = CoTrainer(c, lr=1e-2)
    rnd_eps = held[:16]
    before = c.episode_values(rnd_eps)
    rnd = ct.begin_round(rnd_eps)
    assert rnd.critic_version == 1
    for k in before:  # the round's values ARE the old critic's
        assert np.array_equal(rnd.values[k].v_t, before[k].v_t)
    with pytest.raises(LearnError, match="still open"):
        ct.begin_round(rnd_eps)
    credit = round_credit(list(rnd_eps), rnd.values, RunningStd())
    assert {cr.critic_version for cr in credit} == {1}
    loss_before = bce_loss(c, rnd_eps)
    stats = ct.finish_round(rnd)
    assert c.version == 2 and stats["critic_version"] == 2
    # exactly two AdamW steps over the round's states
    assert {int(s["step"]) for s in ct.opt.state.values()} == {2}
    assert stats["states"] == sum(e.n_requests for e in rnd_eps)
    assert bce_loss(c, rnd_eps) < loss_before
    after = c.episode_values(rnd_eps)
    k = next(iter(after))
    assert not np.allclose(after[k].v_t, before[k].v_t)
    assert np.array_equal(rnd.values[k].v_t, before[k].v_t)  # frozen, not recomputed
    with pytest.raises(LearnError, match="not the open round"):
        ct.finish_round(rnd)


def test_a_critic_changed_between_scoring_and_update_is_refused(trained):
    c0, train, held, _ = trained
    c = Critic(c0.spec, version=c0.version)
    ct = CoTrainer(c)
    rnd = ct.begin_round(held[:4])
    warm_start(c, held[:4], WarmStartConfig(epochs=1))
    with pytest.raises(LearnError, match="changed between scoring and updating"):
        ct.finish_round(rnd)


def test_cotrainer_state_resumes(tmp_path, trained):
    c0, _, held, _ = trained
    c = Critic(c0.spec, version=c0.version)
    c.model.load_state_dict(c0.model.state_dict())
    ct = CoTrainer(c, lr=1e-3)
    ct.finish_round(ct.begin_round(held[:8]))
    ct.save(tmp_path / "c")
    ct2 = CoTrainer.load(tmp_path / "c", lr=1e-3)
    assert ct2.rounds_done == 1 and ct2.critic.version == c.version
    r1, r2 = ct.begin_round(held[8:12]), ct2.begin_round(held[8:12])
    ct.finish_round(r1)
    ct2.finish_round(r2)
    a, b = c.episode_values(held[:2]), ct2.critic.episode_values(held[:2])
    for k in a:
        assert np.allclose(a[k].v_t, b[k].v_t, atol=1e-6)
