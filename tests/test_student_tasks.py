"""``student[:NAME]`` is refused on a task its shipped student was never trained on (captain run,
captain eval and the policy node's goals share :func:`check_student_task`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy import students


def _ship(root: Path, name: str, tasks: list[str]) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "adapter.f16.gguf").write_bytes(b"GGUF")
    record = {"base": "smollm2", "base_sha256": "0" * 64, "adapter": "adapter.f16.gguf",
              "profile": "student", "tasks": tasks}  # fmt: skip
    (folder / students.RECORD).write_text(json.dumps(record))


def test_a_student_runs_only_on_the_tasks_it_was_trained_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ship(tmp_path, "default", ["pick_place"])
    _ship(tmp_path, "towers", ["stack", "restack"])
    _ship(tmp_path, "anything", [])  # a student that names no tasks is not second-guessed
    monkeypatch.setattr(students, "STUDENTS_DIR", tmp_path)

    students.check_student_task("student", "pick_place")
    students.check_student_task("student:towers", "stack")
    students.check_student_task("student:anything", "insertion")
    students.check_student_task("scripted", "stack")  # not a shipped student: not checked
    students.check_student_task("transformers", "stack")
    with pytest.raises(InvalidArgumentError) as err:
        students.check_student_task("student", "stack")
    assert str(err.value) == (
        "the shipped student 'default' was trained on pick_place, not on stack; "
        "shipped students for stack: towers"
    )
    with pytest.raises(InvalidArgumentError, match="'towers' was trained on stack, restack, not"):
        students.check_student_task("student:towers", "insertion")
    with pytest.raises(InvalidArgumentError, match="no shipped student 'nope'"):
        students.check_student_task("student:nope", "stack")


def test_the_packaged_default_student_names_its_tasks() -> None:
    default = students.get_student()
    assert default.tasks and set(default.tasks) <= {
        "pick_place", "stack", "restack", "open_drawer", "two_arm_lift", "insertion"
    }  # fmt: skip
    for task in default.tasks:
        students.check_student_task("student", task)
