"""The hybrid policy mu: the student everywhere, the admitted teacher segment at admitted histories."""

from __future__ import annotations

from typing import Any

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA
from captain_ros.harness.record.trajectory import messages_sha256
from captain_ros.policy.base import Policy, PolicyReply, python_call
from captain_ros.research.re0.contracts import RepairContract
from captain_ros.research.re0.hybrid import Admission, HybridPolicy, robot_symbols, within_contract


class Writer(Policy):
    """Writes ``<tag> <n>`` cells calling ``robot.<capability>`` (counts its own requests)."""

    def __init__(
        self, tag: str, capability: str = "observe", empty_after: int | None = None
    ) -> None:
        self.tag, self.capability, self.empty_after = tag, capability, empty_after
        self.n = 0
        self.name = tag

    def reset(self, task_name: str, seed: int) -> None:
        self.n = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        self.n += 1
        if self.empty_after is not None and self.n > self.empty_after:
            return PolicyReply(content="done")
        return PolicyReply(
            reasoning=self.tag,
            tool_calls=(
                python_call(
                    f"r = robot.{self.capability}()\nprint('{self.tag} {self.n}')", f"c{self.n}"
                ),
            ),
        )


def history(t: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
    ]
    for k in range(1, t):
        msgs += [{"role": "assistant", "content": f"a{k}"}, {"role": "tool", "content": f"o{k}"}]
    return msgs


def admission(
    t: int,
    length: int = 2,
    symbols: tuple[str, ...] = ("observe", "move_to"),
    sha: str | None = None,
    seed: int = 7,
) -> Admission:
    c = RepairContract(t, symbols, length, float(length))
    return Admission("ev1", "pick_place", seed, t, sha or messages_sha256(history(t)), c)


def run(policy: HybridPolicy, n: int, seed: int = 7) -> list[str]:
    policy.reset("pick_place", seed)
    out = []
    for t in range(1, n + 1):
        reply = policy.act(history(t), [PYTHON_TOOL_SCHEMA])
        out.append(reply.reasoning or reply.content)
    return out


def test_student_everywhere_without_admissions():
    mu = HybridPolicy(Writer("student"), Writer("teacher"), [])
    assert run(mu, 4) == ["student"] * 4
    assert [x.source for x in mu.turns] == ["seat"] * 4


def test_the_admitted_segment_runs_then_control_returns():
    mu = HybridPolicy(Writer("student"), Writer("teacher", "move_to"), [admission(3, length=2)])
    assert run(mu, 6) == ["student", "student", "teacher", "teacher", "student", "student"]
    assert [(x.t, x.source, x.event_id) for x in mu.turns][2:5] == [
        (3, "repair", "ev1"),
        (4, "repair", "ev1"),
        (5, "seat", None),
    ]


@pytest.mark.parametrize("adm", [admission(3, sha="0" * 64), admission(3, seed=8), admission(4)])
def test_another_history_is_the_students_alone(adm):
    """Wrong context hash, another seed, or a request the admission is not for: no teacher at 3."""
    mu = HybridPolicy(Writer("student"), Writer("teacher"), [adm])
    got = run(mu, 3)
    assert got[2] == "student"


def test_a_teacher_outside_its_contract_hands_back_to_the_student():
    mu = HybridPolicy(
        Writer("student"), Writer("teacher", "release"), [admission(2, symbols=("observe",))]
    )
    assert run(mu, 3) == ["student", "student", "student"]
    assert "outside the contract: release" in mu.turns[1].note
    mu = HybridPolicy(Writer("student"), Writer("teacher", empty_after=1), [admission(2, length=3)])
    assert run(mu, 4) == ["student", "teacher", "student", "student"]
    assert mu.turns[2].note == "the teacher sent no executable code (done)"  # what it said


def test_a_teacher_sharing_the_students_plan_hands_its_step_back():
    class Shared(Writer):
        def __init__(self) -> None:
            super().__init__("teacher", "release")
            self.handed: list[PolicyReply] = []

        def refused(self, reply: PolicyReply) -> PolicyReply:
            self.handed.append(reply)
            return PolicyReply(reasoning="student-version")

    teacher, student = Shared(), Writer("student")
    mu = HybridPolicy(student, teacher, [admission(2, symbols=("observe",))])
    assert run(mu, 3) == ["student", "student-version", "student"]
    assert len(teacher.handed) == 1 and student.n == 2  # the student was not asked at request 2


def test_resume_at_a_decision_point():
    mu = HybridPolicy(Writer("student"), Writer("teacher"), [admission(3, length=1)])
    mu.resume_at("pick_place", 7, 3)
    assert mu.act(history(3), []).reasoning == "teacher"
    assert mu.act(history(4), []).reasoning == "student"
    assert [x.source for x in mu.turns] == ["seat", "seat", "repair", "seat"]


def test_symbols_and_contract_checks():
    assert robot_symbols("robot.move_to([0, 0, 0.1])\nx = robot.observe\nfinish('ok')") == {
        "move_to",
        "observe",
        "finish",
    }
    assert robot_symbols("def (") == {"<unparseable>"}
    c = RepairContract(1, ("observe",), 1, 1.0)
    assert within_contract(PolicyReply(tool_calls=(python_call("robot.observe()", "a"),)), c) == ""
    assert "finish" in within_contract(PolicyReply(tool_calls=(python_call("finish()", "a"),)), c)
    with pytest.raises(InvalidArgumentError):
        Admission("e", "t", 0, 2, "x", c)
