"""Result contract: closed failure vocabulary, receipt limit, JSON round trip."""

import json

import numpy as np
import pytest

from captain_ros.core import FailureCategory, Result
from captain_ros.core.errors import UnknownNameError


def test_success_and_failure_are_consistent():
    with pytest.raises(ValueError):
        Result(True, failure_category=FailureCategory.CONTACT)
    with pytest.raises(ValueError):
        Result(False)


def test_receipt_is_capped_at_300_chars():
    r = Result.ok(receipt="x" * 1000)
    assert len(r.receipt) == 300
    assert r.receipt.endswith("...")


def test_to_dict_is_json_and_round_trips():
    r = Result.fail(
        FailureCategory.UNREACHABLE,
        "move closer",
        executed=False,
        value={"q": np.arange(3.0), "nan": float("nan"), "f": np.float32(1.5)},
        diagnostics={"residual_m": np.float64(0.02)},
    )
    d = r.to_dict()
    text = json.dumps(d)
    back = Result.from_dict(json.loads(text))
    assert back.failure_category is FailureCategory.UNREACHABLE
    assert back.value["q"] == [0.0, 1.0, 2.0]
    assert back.value["nan"] is None  # non-finite floats become null, never invalid JSON
    assert back.diagnostics["residual_m"] == pytest.approx(0.02)


def test_every_category_documents_what_to_do():
    for cat in FailureCategory:
        assert cat.value == cat.value.lower()
    assert len({c.value for c in FailureCategory}) == len(FailureCategory)


def test_unknown_name_lists_valid_names():
    err = UnknownNameError("arm", "middle", ["left", "right"])
    assert "left, right" in str(err) and "'middle'" in str(err)
