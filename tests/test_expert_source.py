"""The expert's session functions as text: what the session gets is the checked code, whole.

Every registered function's text compiles, carries no docstring, annotation or decorator, reads
only what the session has, and behaves exactly like the module function; dependencies are
resolved transitively; the whole library runs in the real sandboxed session.
"""

from __future__ import annotations

import ast
import builtins
import math

import numpy as np
import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.harness.sandbox.session import PythonSession
from captain_ros.policy.expert import kit, look, parse_notes, source
from captain_ros.policy.expert.plans import PLANS  # registers every plan's session functions

SESSION_GLOBALS = set(dir(builtins)) | {"np", "math", "json"}


def test_every_plan_module_is_registered():
    # the six tasks of tasks/ and robosuite's Lift, Stack, TwoArmLift, Door and NutAssemblySquare
    assert len(PLANS) == 11
    names = source.registered()
    for n in (
        "State",
        "val",
        "go",
        "approach",
        "find",
        "perceive",
        "grab_handle",
        "insert",
        "lift_box",
    ):
        assert n in names
    assert names[0] == "State"  # registration order: the library first, then skills, then plans


@pytest.mark.parametrize("name", source.registered())
def test_session_text_is_the_bare_code_and_reads_only_session_names(name):
    text = source.session_text(name)
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            assert not node.decorator_list
            first = node.body[0]
            assert not (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ), f"{name}: docstring left in"
        if isinstance(node, ast.FunctionDef):
            assert node.returns is None
            assert all(a.annotation is None for a in ast.walk(node.args) if isinstance(a, ast.arg))
        assert not isinstance(node, ast.AnnAssign | ast.Import | ast.ImportFrom)
    extra = source.free_names(name) - SESSION_GLOBALS - set(source.registered())
    assert not extra, f"{name} reads {sorted(extra)}, which the session does not have"


@pytest.mark.parametrize("name", source.registered())
def test_no_session_function_shadows_another(name):
    """A local named like a helper would hide the helper from a student reading the cell."""
    tree = ast.parse(source.session_text(name))
    bound = source._bound(tree, name)
    assert not bound & (set(source.registered()) - {name}), sorted(bound & set(source.registered()))


def test_dependencies_are_transitive_and_in_registration_order():
    closure = source.closure(["descend"])
    assert closure.index("val") < closure.index("go") < closure.index("descend") == len(closure) - 1
    assert {
        "approach",
        "tool_q",
        "qmul",
        "wrap",
        "ok",
        "feasible",
        "tcp",
        "jaw",
        "stop_reason",
    } <= set(closure)
    assert "find" not in closure and "State" not in closure  # no looking; S is made by the setup
    text, new = source.definitions(["descend"], have=closure[:-1])
    assert new == ["descend"] and text.startswith("def descend(S, name")
    assert source.definitions(["descend"], have=closure) == ("", [])
    with pytest.raises(InvalidArgumentError):
        source.closure(["no_such_helper"])


def test_registration_refuses_a_second_function_of_the_same_name():
    def go(S):  # noqa: N803 - the session's state is called S
        return S

    with pytest.raises(InvalidArgumentError, match="two session functions named 'go'"):
        source.in_session(go)
    assert source._REGISTRY["go"] is kit.go


def test_call_arguments_must_be_plain_literals():
    assert source.literal({"a": (1, 2.5, None, True)}) == "{'a': (1, 2.5, None, True)}"
    assert source.literal(math.pi / 2) == repr(math.pi / 2)
    for bad in (np.array([1.0]), object(), float("nan"), np.float32(1.5)):
        with pytest.raises(InvalidArgumentError):
            source.literal(bad)


def _exec_library() -> dict:
    ns: dict = {}
    text, _ = source.definitions(source.registered())
    exec(compile(source.HEADER + "\n" + text, "<library>", "exec"), ns)  # noqa: S102 - our own code
    return ns


def test_the_text_behaves_bit_for_bit_like_the_module():
    ns = _exec_library()
    rng = np.random.default_rng(0)
    for _ in range(200):
        a, b = rng.normal(size=4).tolist(), rng.normal(size=4).tolist()
        yaw, tilt, roll = (
            rng.uniform(-4, 4),
            float(rng.choice([180, 172, 164, 140])),
            rng.uniform(-3, 3),
        )
        v = rng.normal(size=3)
        assert ns["qmul"](a, b) == kit.qmul(a, b)
        assert ns["tool_q"](yaw, tilt, roll) == kit.tool_q(yaw, tilt, roll)
        assert ns["tool_q"](yaw, tilt) == kit.tool_q(yaw, tilt)
        assert ns["qrot"](a, v).tobytes() == kit.qrot(a, v).tobytes()
        assert ns["wrap"](yaw * 3) == kit.wrap(yaw * 3)
    det = {"extents_m": [0.1, 0.03, 0.2]}
    for prefer in ("longest", "tallest", "widest", "smallest", "other"):
        assert ns["rank"](det, prefer) == look.rank(det, prefer)
    r = {"success": True, "value": {"a": {"b": 3}}}
    assert ns["val"](r, "a", "b") == kit.val(r, "a", "b") == 3
    assert ns["val"](r, "a", "x", default=5) == 5 and ns["val"]({"success": False}, default=1) == 1


def test_the_whole_library_runs_in_the_real_sandboxed_session(tmp_path):
    class NoRobot:
        def on_call(self, name, kwargs):
            return {
                "success": False,
                "executed": False,
                "failure_category": "not_available",
                "message": "no robot in this test",
                "value": None,
                "diagnostics": {},
                "budget": {},
            }

        def on_image(self, handle, camera):
            return "no image"

    text, names = source.definitions(source.registered())
    with PythonSession(tmp_path / "ws") as sess:
        res = sess.run_cell(
            source.HEADER + "\n" + text + "\nS = State(robot, 3)\n"
            "note(n=len([k for k in globals() if callable(globals()[k])]), "
            "q=tool_q(0.5, 172, 0.25), epoch=S.epoch, tcp=tcp(S).tolist())",
            NoRobot(),
        )
    assert res.error is None, res.text()
    assert not res.violations
    notes = parse_notes(res.output)
    assert notes["epoch"] == 3 and notes["n"] >= len(names)
    assert notes["q"] == kit.tool_q(0.5, 172, 0.25)
    assert len(notes["tcp"]) == 3 and all(math.isnan(x) for x in notes["tcp"])  # no robot: no pose
