"""Tool-call parsing of what small models actually emit."""

import json

from hypothesis import given
from hypothesis import strategies as st

from captain_ros.policy.toolcalls import parse_reply

CODE = 'obs = robot.observe()\nprint(obs["success"], "done")'


def test_structured_openai_tool_calls():
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "python", "arguments": json.dumps({"code": CODE})},
        },
        {"id": "c2", "function": {"name": "python", "arguments": {"code": "x = 1"}}},
    ]
    r = parse_reply("I will look first.", calls, reasoning_content="thinking hard")
    assert r.code_cells == (CODE, "x = 1")
    assert r.tool_call_ids == ("c1", "c2")
    assert "thinking hard" in r.reasoning and "I will look first." in r.reasoning
    assert r.errors == ()


def test_hermes_tool_call_with_think():
    text = (
        "<think>The cube is red; observe.</think>\nLet me observe.\n<tool_call>\n"
        + json.dumps({"name": "python", "arguments": {"code": CODE}})
        + "\n</tool_call>"
    )
    r = parse_reply(text)
    assert r.code_cells == (CODE,)
    assert r.reasoning.startswith("The cube is red; observe.")
    assert "Let me observe." in r.reasoning and "tool_call" not in r.reasoning


def test_two_hermes_calls_keep_order():
    a = json.dumps({"name": "python", "arguments": {"code": "a = 1"}})
    b = json.dumps({"name": "python", "arguments": json.dumps({"code": "b = 2"})})
    r = parse_reply(f"<tool_call>{a}</tool_call> then <tool_call>{b}</tool_call>")
    assert r.code_cells == ("a = 1", "b = 2")
    assert r.reasoning == "then"


def test_truncated_hermes_json_is_repaired():
    full = json.dumps({"name": "python", "arguments": {"code": CODE}})
    cut = full[: full.index("done") + 2]  # cut inside the code string by the token limit
    r = parse_reply("<tool_call>" + cut)
    assert len(r.code_cells) == 1
    assert r.code_cells[0].startswith('obs = robot.observe()\nprint(obs["success"], "do')


def test_invalid_json_code_field_is_extracted():
    # trailing comma and single-quoted key after the code field: invalid JSON
    body = '{"name": "python", "arguments": {"code": "x = 1\\ny = 2", \'bad\': 3,}}'
    r = parse_reply(f"<tool_call>{body}</tool_call>")
    assert r.code_cells == ("x = 1\ny = 2",)


def test_python_literal_dict_is_accepted():
    body = "{'name': 'python', 'arguments': {'code': 'print(1)'}}"
    assert parse_reply(f"<tool_call>{body}</tool_call>").code_cells == ("print(1)",)


def test_bare_code_inside_tool_call_and_as_arguments():
    assert parse_reply("<tool_call>\nprint(2)\n</tool_call>").code_cells == ("print(2)",)
    calls = [{"function": {"name": "python", "arguments": "print(3)"}}]
    assert parse_reply("", calls).code_cells == ("print(3)",)
    calls = [{"function": {"name": "python", "arguments": json.dumps("print(4)")}}]
    assert parse_reply("", calls).code_cells == ("print(4)",)


def test_fenced_python_blocks_when_no_markup():
    text = "Plan: observe.\n```python\nobs = robot.observe()\n```\nand then\n```\nx = 2\n```"
    r = parse_reply(text)
    assert r.code_cells == ("obs = robot.observe()", "x = 2")
    assert "Plan: observe." in r.reasoning and "```" not in r.reasoning


def test_unclosed_fence_and_fence_inside_tool_call():
    assert parse_reply("```python\nx = 1\n").code_cells == ("x = 1",)
    assert parse_reply("<tool_call>```python\ny = 1\n```</tool_call>").code_cells == ("y = 1",)


def test_qwen3_coder_xml_form():
    text = "<function=python>\n<parameter=code>\nprint('hi')\n</parameter>\n</function>"
    assert parse_reply(text).code_cells == ("print('hi')",)


def test_unknown_tool_and_empty_code_are_errors_not_crashes():
    r = parse_reply('<tool_call>{"name": "bash", "arguments": {"cmd": "ls"}}</tool_call>')
    assert r.code_cells == () and "unknown tool 'bash'" in r.errors[0]
    r = parse_reply('<tool_call>{"name": "python", "arguments": {"code": ""}}</tool_call>')
    assert r.code_cells == () and "empty code" in r.errors[0]
    r = parse_reply('<tool_call>{"name": "python", "arguments": {"x": 1, "y": 2}}</tool_call>')
    assert r.code_cells == () and "could not be parsed" in r.errors[0]
    assert r.has_tool_call


def test_plain_prose_has_no_tool_call():
    r = parse_reply("The task is complete.")
    assert not r.has_tool_call and r.reasoning == "The task is complete."
    assert not parse_reply(None).has_tool_call


def test_think_closed_only():
    r = parse_reply("reasoning from a template-opened think</think>\n```python\nz=3\n```")
    assert r.code_cells == ("z=3",)
    assert r.reasoning.startswith("reasoning from a template-opened think")


@given(st.text(max_size=300))
def test_any_text_never_raises(text):
    r = parse_reply(text)
    assert isinstance(r.code_cells, tuple)


@given(st.text(max_size=200))
def test_any_code_roundtrips_through_hermes_json(code):
    body = json.dumps({"name": "python", "arguments": {"code": code}})
    r = parse_reply(f"<tool_call>{body}</tool_call>")
    if code.strip():
        assert r.code_cells == (code,)
    else:
        assert r.code_cells == () and r.errors
