"""One RL round of Algorithm 1 on a tiny model, end to end over the learning pieces:

rollout records (hand-built, G = 4 per start state) -> critic values from BEFORE the update ->
credit -> critic co-training update -> policy-gradient accumulation on <= 8 requests per episode
-> optimizer step. The rollout loop and workers belong to the harness side; this checks that the
pieces plug together in the paper's order.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from test_rl_update_lora import tiny_lora  # noqa: E402

from captain_ros.learn.credit import RunningStd, round_credit  # noqa: E402
from captain_ros.learn.critic import CoTrainer, Critic, WarmStartConfig, warm_start  # noqa: E402
from captain_ros.learn.critic.synthetic import synthetic_episodes  # noqa: E402
from captain_ros.learn.rl import PolicyUpdater, UpdateConfig, segment_sample, token_logprobs  # noqa: E402
from captain_ros.tasks.features import FEATURE_NAMES  # noqa: E402

pytestmark = pytest.mark.learn
torch.set_num_threads(1)


def _segment(model, rng, ep, version):
    """Token ids for the episode's requests, with the policy's own log-probs as rollout log-probs."""
    prompts, completions, lps, ids = [], [], [], [1, 2, 3]
    for _ in range(ep.n_requests):
        prompts.append(list(ids))
        reply = rng.integers(4, 96, size=3).tolist()
        full = torch.tensor(ids + reply)
        pos = torch.arange(len(ids), len(ids) + 3)
        with torch.no_grad():
            lps.append(token_logprobs(model, full, pos).tolist())
        completions.append(reply)
        ids = ids + reply + [3]  # tool output
    return segment_sample(ep.episode_id, prompts, completions, lps, version)


def test_one_round_in_the_papers_order():
    rng = np.random.default_rng(0)
    warm = synthetic_episodes(40, seed=20, mean_requests=10)
    critic = Critic.for_episodes(warm, FEATURE_NAMES)
    warm_start(critic, warm, WarmStartConfig(epochs=2))
    cot = CoTrainer(critic)
    model = tiny_lora(3)
    upd = PolicyUpdater(model, UpdateConfig(lr=1e-3, accumulation_rounds=1, warmup_steps=0))
    running = RunningStd()

    episodes = synthetic_episodes(4, seed=21, mean_requests=10)  # 4 start states x G = 4
    assert len({e.group for e in episodes}) == 4 and len(episodes) == 16
    samples = [_segment(model, rng, e, upd.version) for e in episodes]
    rnd = cot.begin_round(episodes)  # 2: credit, old critic
    credits = round_credit(episodes, rnd.values, running)
    cstats = cot.finish_round(rnd)  # 3: critic update
    adv = {c.episode_id: c.by_request() for c in credits}
    pstats = upd.accumulate_round(samples, adv)  # 4 + 5: accumulate, step
    assert {c.critic_version for c in credits} == {1} and cstats["critic_version"] == 2
    assert pstats.stepped and upd.version == 1 and pstats.episodes == 16
    assert pstats.requests_sampled == sum(min(8, e.n_requests) for e in episodes)
    assert pstats.kept_fraction == 1.0 and np.isfinite(pstats.loss)
    # group term: outcome terms sum to zero within every start state
    for g in {e.group for e in episodes}:
        members = [c for c, e in zip(credits, episodes, strict=True) if e.group == g]
        assert abs(sum(float(np.mean(c.raw)) for c in members)) < 1e-9
