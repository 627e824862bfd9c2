"""Credit formulas of CaPtain eqs. 5-6 against numbers computed by hand."""

import numpy as np
import pytest
from rl_records import make_record, request

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.credit import (
    EpisodeValues,
    RunningStd,
    apply_error_only_rule,
    gae,
    group_advantages,
    round_credit,
    td_deltas,
)
from captain_ros.learn.episodes import episode_arrays


def test_td_deltas_by_hand():
    # V(s_t, t) = .5 .6 .8 ; V(s_{t+1}, t) = .55 .9 ; c = 0 -.02 -.008 ; R = 1
    d = td_deltas(
        np.array([0.5, 0.6, 0.8]), np.array([0.55, 0.9]), np.array([0.0, -0.02, -0.008]), 1.0
    )
    assert d == pytest.approx([0.05, 0.28, 0.192])


def test_delta_holds_t_fixed_so_time_alone_gives_no_credit():
    # A critic V(s, t) = g(s) + h(t): with the SAME t in both terms h cancels for t < T.
    g = np.array([0.2, 0.2, 0.2, 0.7])  # the state does not change during requests 1 and 2
    h = np.array([0.0, -0.05, -0.1])  # but the value drifts with t
    v_t = g[:3] + h
    v_next = g[1:3] + h[:2]
    d = td_deltas(v_t, v_next, np.zeros(3), 0.0)
    assert d[:2] == pytest.approx([0.0, 0.0])
    # with the shifted index (V(s_{t+1}, t+1)) the drift would leak in: -0.05 per request
    leak = (g[1:3] + h[1:]) - v_t[:2]
    assert leak == pytest.approx([-0.05, -0.05])


def test_gae_lambda_09_no_discount_by_hand():
    a = gae(np.array([0.05, 0.28, 0.192]), 0.9)
    # A3 = .192 ; A2 = .28 + .9 * .192 = .4528 ; A1 = .05 + .9 * .4528 = .45752
    assert a == pytest.approx([0.45752, 0.4528, 0.192])
    assert gae(np.array([1.0, 1.0]), 1.0) == pytest.approx([2.0, 1.0])
    assert gae(np.array([1.0, 1.0]), 0.0) == pytest.approx([1.0, 1.0])
    with pytest.raises(InvalidArgumentError):
        gae(np.array([1.0]), 1.5)


def test_group_term_by_hand():
    # G1 = 1 - .028 = .972, G2 = 0 - .04 = -.04 ; mean G = .466
    a1, a2 = group_advantages(
        [0.972, -0.04], [np.array([0.45752, 0.4528, 0.192]), np.array([-0.508, -0.32])]
    )
    # outcome terms +-.506 ; GAE means .36744 and -.414
    assert a1 == pytest.approx([0.59608, 0.59136, 0.33056])
    assert a2 == pytest.approx([-0.6, -0.412])


def test_running_std_merges_batches_and_does_not_recentre():
    r = RunningStd()
    r.update(np.array([1.0, -1.0]))
    assert r.std == pytest.approx(1.0)
    r.update(np.array([3.0]))
    # population std of [1, -1, 3] = sqrt(8 / 3)
    assert r.std == pytest.approx(np.sqrt(8 / 3))
    assert r.mean == pytest.approx(1.0)
    # divided, not re-centred: 3 / sqrt(8/3), and 0 stays 0
    assert r.scale(np.array([3.0, 0.0])) == pytest.approx([3 / np.sqrt(8 / 3), 0.0])
    r2 = RunningStd.from_state_dict(r.state_dict())
    assert r2.std == r.std


def test_error_only_requests_get_no_positive_credit_and_a_penalty():
    a = apply_error_only_rule(np.array([0.5, -0.2, 0.7]), np.array([True, True, False]), 0.1)
    assert a == pytest.approx([-0.1, -0.3, 0.7])
    with pytest.raises(InvalidArgumentError):
        apply_error_only_rule(np.zeros(1), np.ones(1, bool), -0.1)


def _pair_of_episodes():
    e1 = episode_arrays(
        make_record(
            seed=7,
            outcome="success_with_finish",
            requests=[
                request(1, physical_actions=1),
                request(2, physical_actions=2, failed_physical=1, cost=-0.02),
                request(3, physical_actions=1, cost=-0.008),
            ],
        )
    )
    e2 = episode_arrays(
        make_record(
            seed=7,
            outcome="other_failure",
            out_dir="b",
            requests=[
                request(1, cost=-0.02, python_error_only=True),
                request(2, physical_actions=1, cost=-0.02),
            ],
        )
    )
    values = {
        e1.episode_id: EpisodeValues(np.array([0.5, 0.6, 0.8]), np.array([0.55, 0.9]), 3),
        e2.episode_id: EpisodeValues(np.array([0.5, 0.3]), np.array([0.3]), 3),
    }
    return e1, e2, values


def test_round_credit_end_to_end_by_hand():
    e1, e2, values = _pair_of_episodes()
    assert e1.group == e2.group == "pick_place:7"
    rs = RunningStd()
    c1, c2 = round_credit([e1, e2], values, rs)
    assert c1.deltas == pytest.approx([0.05, 0.28, 0.192])
    assert c2.deltas == pytest.approx([-0.22, -0.32])
    assert c1.raw == pytest.approx([0.59608, 0.59136, 0.33056])
    assert c2.raw == pytest.approx([-0.6, -0.412])
    # population std of the five raw advantages, worked out by hand: 0.508493
    assert rs.std == pytest.approx(0.508493, abs=1e-6)
    assert c1.advantages == pytest.approx(np.array([0.59608, 0.59136, 0.33056]) / 0.5084928)
    # request 1 of e2 only produced Python errors: min(-0.6 / std, 0) - 0.1
    assert c2.advantages[0] == pytest.approx(-0.6 / 0.5084928 - 0.1)
    assert c2.advantages[1] == pytest.approx(-0.412 / 0.5084928)
    assert c1.critic_version == 3


def test_round_credit_refuses_mixed_critic_versions_and_missing_values():
    e1, e2, values = _pair_of_episodes()
    values[e2.episode_id] = EpisodeValues(
        values[e2.episode_id].v_t, values[e2.episode_id].v_next, 4
    )
    with pytest.raises(InvalidArgumentError, match="one critic version"):
        round_credit([e1, e2], values, RunningStd())
    with pytest.raises(InvalidArgumentError, match="no critic values"):
        round_credit([e1, e2], {}, RunningStd())


def test_episode_values_and_records_are_validated():
    with pytest.raises(InvalidArgumentError):
        EpisodeValues(np.array([0.1, 0.2]), np.array([0.1, 0.2]))
    with pytest.raises(InvalidArgumentError):
        EpisodeValues(np.array([np.nan]), np.array([]))
    from captain_ros.learn.errors import RecordError

    rec = make_record(n_requests=2)
    bad = rec.__class__(**{**rec.__dict__, "states": rec.states[:2]})
    with pytest.raises(RecordError, match="need 3 states"):
        episode_arrays(bad)
    bad = rec.__class__(**{**rec.__dict__, "outcome": "won"})
    with pytest.raises(RecordError, match="unknown outcome"):
        episode_arrays(bad)
