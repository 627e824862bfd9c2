"""The prompt-lookup drafter: which earlier occurrence it drafts from, and its bounds."""

from __future__ import annotations

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.engines.lookup import LookupDrafter, LookupSettings


def drafter(**kw) -> LookupDrafter:
    return LookupDrafter(LookupSettings(**{"max_draft": 4, "ngram_min": 2, "ngram_max": 4, **kw}))


def test_drafts_what_followed_the_latest_occurrence_of_the_longest_suffix():
    d = drafter()
    d.start([1, 2, 3, 10, 11, 7, 2, 3, 20, 21, 22])
    # the suffix [2, 3] occurs twice; the latest occurrence is followed by 20, 21, ...
    assert d.draft([5, 2, 3], limit=8) == [20, 21, 22, 5]
    # a longer suffix wins over a later, shorter one: [1, 2, 3] occurs once, at the start
    assert d.draft([1, 2, 3], limit=3) == [10, 11, 7]
    assert d.draft([9, 9], limit=3) == []  # never seen
    assert d.draft([7, 2, 3], limit=0) == []


def test_a_suffix_shorter_than_ngram_min_drafts_nothing():
    d = drafter(ngram_min=3)
    d.start([1, 2, 3, 4, 5])
    assert d.draft([8, 4], limit=4) == []  # [8, 4] never occurred; [4] alone is too short
    assert d.draft([2, 3, 4], limit=4) == [5, 2, 3, 4]


def test_the_memory_of_earlier_replies_is_searched_and_bounded():
    d = drafter(memory_tokens=6)
    d.remember([40, 41, 42, 43])
    d.start([1, 2])
    assert d.draft([41, 42], limit=4) == [43, 1, 2, 41]
    d.remember([50, 51, 52, 53])  # the memory keeps its last 6 tokens: 42, 43, 50, ...
    d.start([1, 2])
    assert d.draft([40, 41], limit=4) == []
    assert d.draft([42, 43], limit=2) == [50, 51]
    off = drafter(memory_tokens=0)
    off.remember([40, 41, 42, 43])
    off.start([1, 2])
    assert off.draft([41, 42], limit=4) == []


@pytest.mark.parametrize(
    "kw",
    [{"max_draft": -1}, {"ngram_min": 0}, {"ngram_min": 5, "ngram_max": 4}, {"memory_tokens": -1}],
)
def test_bad_settings_are_refused(kw):
    with pytest.raises(InvalidArgumentError):
        LookupSettings(**kw)


def test_drafters_of_one_model_share_their_memory_in_a_process():
    a = LookupDrafter(LookupSettings(ngram_min=2), shared="test-model-a")
    a.remember([60, 61, 62, 63])
    b = LookupDrafter(LookupSettings(ngram_min=2), shared="test-model-a")  # the next episode's
    other = LookupDrafter(LookupSettings(ngram_min=2), shared="test-model-b")
    for d in (b, other):
        d.start([1])
    assert b.draft([61, 62], limit=2) == [63, 1]
    assert other.draft([61, 62], limit=2) == []
