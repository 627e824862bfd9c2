"""``student[:NAME]`` decodes as its held-out figures were measured (``decoding`` in
``student.json``; greedy and 160 new tokens for a record without it) unless the caller asks
otherwise, and a malformed ``decoding`` is refused with one line naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from captain_ros.policy import students
from captain_ros.policy.config import PolicyConfig
from captain_ros.policy.engines.base import ModelFileError


def _ship(root: Path, name: str, **extra: Any) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "adapter.f16.gguf").write_bytes(b"GGUF")
    record = {"base": "smollm2", "base_sha256": "0" * 64, "adapter": "adapter.f16.gguf",
              "profile": "student", "tasks": ["pick_place"], **extra}  # fmt: skip
    (folder / students.RECORD).write_text(json.dumps(record))


def test_a_student_decodes_as_its_record_says_unless_asked_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ship(tmp_path, "old")  # shipped before the field: measured greedy, 160 tokens
    _ship(tmp_path, "warm", decoding={"temperature": 0.7, "max_new_tokens": 200})
    monkeypatch.setattr(students, "STUDENTS_DIR", tmp_path)

    old = students.expand_policy(PolicyConfig("student:old"))
    assert (old.spec, old.temperature, old.max_new_tokens) == ("transformers", 0.0, 160)
    warm = students.expand_policy(PolicyConfig("student:warm"))
    assert (warm.temperature, warm.max_new_tokens) == (0.7, 200)
    asked = students.expand_policy(PolicyConfig("student:warm", temperature=0.0, max_new_tokens=64))
    assert (asked.temperature, asked.max_new_tokens) == (0.0, 64)
    other = PolicyConfig("transformers", model_folder="smollm2")
    assert students.expand_policy(other) == other  # not a student: untouched


@pytest.mark.parametrize(
    ("decoding", "why"),
    [
        ({"temperature": -1, "max_new_tokens": 160}, "decoding.temperature must be a number >= 0"),
        ({"temperature": "0", "max_new_tokens": 160}, "decoding.temperature must be a number >= 0"),
        (
            {"temperature": 0, "max_new_tokens": 0},
            "decoding.max_new_tokens must be an integer >= 1",
        ),
        ({"temperature": 0, "max_new_tokens": 1.5}, "decoding.max_new_tokens must be an integer"),
        ({"temperature": 0}, "decoding.max_new_tokens must be an integer"),
        ("greedy", "decoding must be an object"),
    ],
)
def test_a_malformed_decoding_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoding: Any, why: str
) -> None:
    _ship(tmp_path, "bad", decoding=decoding)
    monkeypatch.setattr(students, "STUDENTS_DIR", tmp_path)
    with pytest.raises(ModelFileError, match=f"student.json is not a student record: {why}"):
        students.expand_policy(PolicyConfig("student:bad"))


def test_the_packaged_students_decode_greedily() -> None:
    """What the cards' held-out figures were measured with (exp_student.py: greedy, 160)."""
    for name in students.names():
        student = students.get_student(name)
        assert (student.temperature, student.max_new_tokens) == (0.0, 160), name


def _ship_student():  # noqa: ANN202 - scripts/ship_student.py as a module
    import importlib.util

    script = Path(__file__).resolve().parents[1] / "scripts" / "ship_student.py"
    spec = importlib.util.spec_from_file_location("ship_student", script)
    assert spec is not None and spec.loader is not None
    ship = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ship)
    return ship


def test_ship_student_records_how_the_held_out_episodes_decoded(tmp_path: Path) -> None:
    ship = _ship_student()

    assert ship.decoding(tmp_path) == students.EVAL_DECODING  # a run from before the record
    episode = tmp_path / "eval_heldout" / "stack" / "1500-1519" / "seed_01500"
    episode.mkdir(parents=True)
    runtime = {
        "engine": "llamacpp",
        "decoding": {"temperature": 0.5, "top_p": 1.0, "max_new_tokens": 96},
    }
    (episode / "summary.json").write_text(json.dumps({"extra": {"policy_runtime": runtime}}))
    assert ship.decoding(tmp_path) == {"temperature": 0.5, "max_new_tokens": 96}


def test_a_continued_students_card_names_where_its_weights_started(tmp_path: Path) -> None:
    ship = _ship_student()

    assert ship._lineage({"init_adapter": None}) == []  # noqa: SLF001 - the card's pieces
    init = tmp_path / "shipped" / "adapter"
    init.mkdir(parents=True)
    assert ship._lineage({"init_adapter": str(init)}) == [  # noqa: SLF001
        f"- Started from the LoRA weights of `{init}`; this run's steps continue them."
    ]
    imported = {"imported_from": {"student": "default", "sha256": "290f90f13892b46031"}}
    (init.parent / "sft_config.json").write_text(json.dumps(imported))
    (line,) = ship._lineage({"init_adapter": str(init)})  # noqa: SLF001
    assert "shipped student `default`" in line and "290f90f13892..." in line
