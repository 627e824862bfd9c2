"""SR / VP / EA / PAUC and termination labels, including the paper's worked PAUC examples."""

from __future__ import annotations

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.coevolve.metrics import RunOutcome, group_metrics, pauc_run, progress_at


def run(first, *, success=False, final=None, accepted=10, charged=10, unresolved=0, term="B"):
    k = len(first)
    q = sum(t is not None for t in first) if final is None else final
    return RunOutcome(success, k, q, tuple(first), accepted, charged, unresolved, term)


def test_paper_examples_half_the_milestones_at_20_and_at_60_of_80():
    assert pauc_run(run((20, None)), 80) == pytest.approx(37.5)
    assert pauc_run(run((60, None)), 80) == pytest.approx(12.5)
    assert pauc_run(run((20, 20, None, None)), 80) == pytest.approx(37.5)


def test_step_function_convention():
    assert progress_at(run((1, None)), 0) == 0.0  # p(0) = 0
    assert progress_at(run((1, None)), 1) == 0.5
    assert pauc_run(run((80, None)), 80) == 0.0  # attainment exactly at B contributes no area
    assert pauc_run(run((79, None)), 80) == pytest.approx(100 * 0.5 / 80)
    assert pauc_run(run((None, None)), 80) == 0.0  # no certified milestone scores zero
    assert pauc_run(run((1, 1)), 80) == pytest.approx(100 * 79 / 80)
    # progress after termination is held constant until B: a run that stopped at 30 keeps its credit
    assert pauc_run(run((10, None), charged=30, accepted=20), 80) == pytest.approx(
        100 * 0.5 * 70 / 80
    )
    # milestones after the horizon earn nothing within it
    assert pauc_run(run((100, 120)), 80) == 0.0


def test_vp_ea_sr_are_means_of_per_run_values():
    a = run((1, 2, None, None), accepted=9, charged=10, success=True, term="success")
    b = run((3, None, None, None), accepted=1, charged=4)
    m = group_metrics([a, b], 80)
    assert m.sr == 50.0
    assert m.vp == pytest.approx(100 * (2 / 4 + 1 / 4) / 2)
    assert m.ea == pytest.approx(100 * (0.9 + 0.25) / 2)  # mean of ratios, not 10/14 pooled
    assert m.ea != pytest.approx(100 * 10 / 14)
    assert not m.ea_is_lower_bound and m.terminations == {"success": 1, "B": 1}
    assert m.mean_transactions == 7


def test_unresolved_outcomes_make_ea_a_lower_bound():
    m = group_metrics([run((1,), accepted=5, charged=10, unresolved=2)], 80)
    assert m.ea == pytest.approx(50.0) and m.ea_upper == pytest.approx(70.0)
    assert m.ea_is_lower_bound and m.ea_text().startswith("≥")


def test_runs_without_charged_transactions_are_left_out_of_ea():
    m = group_metrics(
        [run((None,), accepted=0, charged=0, term="G"), run((2,), accepted=3, charged=4)], 80
    )
    assert m.ea == pytest.approx(75.0) and m.vp == 50.0


def test_invalid_accounting_is_refused():
    with pytest.raises(InvalidArgumentError):
        run((1,), term="X")
    with pytest.raises(InvalidArgumentError):
        RunOutcome(False, 2, 3, (1, 2), 0, 0)
    with pytest.raises(InvalidArgumentError):
        RunOutcome(False, 2, 1, (1,), 0, 0)
    with pytest.raises(InvalidArgumentError):
        RunOutcome(False, 1, 0, (None,), 5, 4)
    with pytest.raises(InvalidArgumentError):
        pauc_run(run((1,)), 0)
    with pytest.raises(InvalidArgumentError):
        group_metrics([])
