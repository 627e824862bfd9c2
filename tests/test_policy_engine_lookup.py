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


def test_the_corpus_is_searched_before_the_request_and_never_changes():
    d = LookupDrafter(
        LookupSettings(max_draft=4, ngram_min=2, ngram_max=4), corpus=[40, 41, 42, 43]
    )
    d.start([1, 2])
    assert d.draft([41, 42], limit=4) == [43, 1, 2, 41]
    d.start([41, 42, 50])  # a later occurrence in the request wins over the corpus
    assert d.draft([41, 42], limit=2) == [50, 41]
    d.start([7])  # nothing of the last request stays: drafts depend on corpus + request only
    assert d.draft([42, 50], limit=2) == []
    assert LookupDrafter(LookupSettings(ngram_min=2)).draft([41, 42], limit=2) == []


@pytest.mark.parametrize(
    "kw",
    [{"max_draft": -1}, {"ngram_min": 0}, {"ngram_min": 5, "ngram_max": 4}],
)
def test_bad_settings_are_refused(kw):
    with pytest.raises(InvalidArgumentError):
        LookupSettings(**kw)
