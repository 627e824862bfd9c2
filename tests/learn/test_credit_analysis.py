"""The credit analysis of paper section 4.5 on hand-built records."""

import numpy as np
import pytest
from rl_records import HELD, JAW, make_record, request

from captain_ros.learn.credit import EpisodeValues, classify_requests, credit_analysis
from captain_ros.learn.episodes import episode_arrays
from captain_ros.tasks.features import FEATURE_NAMES


def _states(jaws, held):
    out = []
    for j, h in zip(jaws, held, strict=True):
        x = np.zeros(36, np.float32)
        x[JAW], x[HELD] = j, float(h)
        out.append(x)
    return out


def _episodes():
    held = [False, False, True, True, False, False]
    a = episode_arrays(
        make_record(
            seed=1,
            features=_states([0.08, 0.08, 0.03, 0.03, 0.08, 0.08], held),
            held=held,
            requests=[
                request(1, physical_actions=1, capabilities=("move_to",)),
                request(2, physical_actions=2, capabilities=("move_to", "move_to")),
                request(3, perception_only=True, capabilities=("observe", "segment")),
                request(4, physical_actions=1, capabilities=("release",)),
                request(5, physical_actions=1, capabilities=("move_to",)),
            ],
        )
    )
    held_b = [False, False, False]
    b = episode_arrays(
        make_record(
            seed=2,
            outcome="other_failure",
            held=held_b,
            features=_states([0.08, 0.0, 0.0], held_b),
            requests=[
                request(1, physical_actions=1, capabilities=("move_to",)),
                request(2, physical_actions=1, capabilities=("move_to",)),
            ],
        )
    )
    values = {
        a.episode_id: EpisodeValues(
            np.array([0.3, 0.32, 0.6, 0.61, 0.8]), np.array([0.32, 0.6, 0.59, 0.85])
        ),
        b.episode_id: EpisodeValues(np.array([0.3, 0.25]), np.array([0.25])),
    }
    adv = {a.episode_id: np.array([1.0, 2.0, -0.5, 1.0, 0.5]), b.episode_id: np.array([-1.0, 0.5])}
    return a, b, values, adv


def test_request_kinds_from_states_and_records():
    a, b, _, _ = _episodes()
    ka = classify_requests(a, FEATURE_NAMES)
    assert ka.kinds == ("motion", "grasp", "perception", "release", "motion")
    assert bool(ka.grasp_success[1])
    kb = classify_requests(b, FEATURE_NAMES)
    assert kb.kinds == ("grasp", "motion")  # the jaw closed 8 cm but nothing is held
    assert not bool(kb.grasp_success[0])


def test_shares_of_abs_advantage_and_median_delta_v_by_hand():
    a, b, values, adv = _episodes()
    res = credit_analysis([a, b], values, adv, FEATURE_NAMES)
    share = res["abs_advantage_share"]
    # |A| mass: motion 1 + .5 + .5 = 2, grasp 2 + 1 = 3, release 1, perception .5 ; total 6.5
    assert share["motion"] == pytest.approx(2 / 6.5)
    assert share["grasp"] == pytest.approx(3 / 6.5)
    assert share["release"] == pytest.approx(1 / 6.5)
    assert share["perception"] == pytest.approx(0.5 / 6.5)
    assert share["other"] == 0.0
    med = res["median_delta_v"]
    assert med["grasp_success"] == pytest.approx(0.28)  # .6 - .32
    assert med["grasp_failed"] == pytest.approx(-0.05)  # .25 - .3
    assert med["perception"] == pytest.approx(-0.01)  # .59 - .6
    assert res["requests"]["grasp"] == 2
    assert res["anchors"]["median_delta_v"]["grasp_success"] == 0.058
