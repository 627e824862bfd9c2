"""The scripted expert: note parsing, instruction reading, plans reacting to cell outputs, the
restart sentinel, and the Policy adapter (no simulator: the outputs are written by the test)."""

from __future__ import annotations

import json

import pytest

from captain_ros.core.errors import UnknownNameError
from captain_ros.policy.expert import PLANS, PROBE, ScriptedExpert, parse_notes
from captain_ros.policy.expert.cells import has_note
from captain_ros.policy.expert.routines import colour_of, verified
from captain_ros.policy.scripted import ScriptedPolicy, instruction_from, outputs_since_last_reply

TASKS = ("pick_place", "stack", "restack", "open_drawer", "two_arm_lift", "insertion")
SETUP_OUT = 'NOTE {"ready": true, "arms": ["arm"], "poses": {"arm": [[0.23, 0.0, 0.12], [0.0, 0.0, -1.0, 0.0]]}}'


def test_every_task_has_a_plan_and_unknown_tasks_are_refused():
    from captain_ros.tasks import task_names

    assert set(PLANS) == set(TASKS) | set(task_names("robosuite"))  # our tasks and robosuite's
    with pytest.raises(UnknownNameError):
        ScriptedExpert("fold_laundry")


def test_parse_notes_merges_lines_and_ignores_noise():
    out = 'hello\nNOTE {"a": 1}\n[move_to] receipt NOTE {"x": 9}\nNOTE {"b": [1, 2]}\nNOTE {bad json}\nNOTE [3]\n'
    assert parse_notes(out) == {"a": 1, "b": [1, 2]}
    assert parse_notes("") == {}
    assert has_note(out) and not has_note("NOTE {bad}\nNOTE [1]") and not has_note(None)


def test_colour_words_from_the_instruction():
    assert colour_of("grab the cyan handle and pull the drawer out", ("handle",)) == "cyan"
    assert colour_of("open the drawer", ("handle",)) is None
    assert (
        colour_of("insert the orange peg into the hole of the green block", ("block",)) == "green"
    )


def test_verified_needs_a_resting_or_touching_object_within_tolerance():
    assert verified({"dist": 0.01, "resting": True, "gap": 0.001}, 0.02)
    assert verified({"dist": 0.01, "resting": False, "gap": 0.004}, 0.02)  # touching the support
    assert not verified({"dist": 0.03, "resting": True, "gap": 0.0}, 0.02)
    assert not verified({"dist": 0.01, "resting": False, "gap": 0.009}, 0.02)
    assert not verified({"dist": 0.01, "resting": True, "gap": 0.02}, 0.02)
    assert not verified({"dist": "near", "resting": True}, 0.02) and not verified({}, 0.02)


def test_the_first_cell_sets_up_the_state_and_defines_only_what_it_uses():
    cell = ScriptedExpert("pick_place").next_cell(None)
    assert "S = State(robot, 1)" in cell.code and cell.code.rstrip().endswith("note(**start(S))")
    assert "def approach(" not in cell.code and "def find(" not in cell.code  # defined on first use
    compile(cell.code, "<setup>", "exec")


def test_every_cell_of_every_plan_compiles_and_plans_react_to_failures():
    for task in TASKS:
        expert = ScriptedExpert(task, "do the " + task)
        cell = expert.next_cell(None)
        defined: dict[str, int] = {}
        n = 1
        while cell is not None and n < 40:
            compile(cell.code, f"<{task} cell {n}>", "exec")
            for line in cell.code.splitlines():
                if line.startswith("def "):
                    name = line[4 : line.index("(")]
                    assert name not in defined, (
                        f"{task}: {name} defined twice (cells {defined[name]}, {n})"
                    )
                    defined[name] = n
            # every request fails to find anything: the expert must stop without finishing
            cell = expert.next_cell('NOTE {"found": {}, "ready": true}')
            n += 1
            if cell is not None:
                assert "finish(S" not in cell.code, f"{task}: finish without verification"
        assert cell is None and expert.done


def test_pick_place_plan_follows_its_notes_to_finish():
    e = ScriptedExpert("pick_place", "put the red cube on the plate")
    replies = [
        (
            SETUP_OUT,
            "perceive(S, {'red_cube': 'red cube', 'plate': 'plate'}, dest=('red_cube', 'plate'))",
        ),
        ('NOTE {"found": {"red_cube": true, "plate": true}}', "note(**descend(S, 'red_cube'))"),
        ('NOTE {"down_ok": true}', "note(**close_lift(S, 'red_cube'))"),
        ('NOTE {"held": true}', "perceive(S, {'plate': 'plate'}, keep=True)"),
        ('NOTE {"found": {"plate": true}}', "note(**place(S, 'red_cube', 'plate'))"),
        ('NOTE {"placed": true}', "note(**verify(S, 'red_cube', 'red cube', 'plate', 'plate'))"),
        (
            'NOTE {"dist": 0.004, "resting": true, "gap": 0.001}',
            "finish(S, 'red cube on the plate, 0.4 cm",
        ),
    ]
    cell = e.next_cell(None)
    for output, expected in replies:
        cell = e.next_cell(output)
        assert cell is not None and expected in cell.code, (output, cell and cell.code[-300:])
    assert e.next_cell('NOTE {"accepted": true}') is None
    assert e.ready == {"arm": [[0.23, 0.0, 0.12], [0.0, 0.0, -1.0, 0.0]]}


def test_grasp_miss_leads_to_recovery_not_to_lifting():
    e = ScriptedExpert("pick_place")
    e.next_cell(None)
    e.next_cell(SETUP_OUT)
    e.next_cell('NOTE {"found": {"red_cube": true, "plate": true}}')
    cell = e.next_cell('NOTE {"down_ok": false, "down": "contact"}')
    assert "note(**back_off(S))" in cell.code and "contact" in cell.reasoning


def test_a_cell_without_a_note_is_followed_by_a_probe_and_the_plan_goes_on_if_the_state_is_there():
    e = ScriptedExpert("pick_place")
    e.next_cell(None)
    e.next_cell(SETUP_OUT)  # perceive
    probe = e.next_cell("Traceback (most recent call last):\nKeyError: 'center_m'")
    assert probe.code == PROBE and e.restarts == 0
    compile(probe.code, "<probe>", "exec")
    cell = e.next_cell(
        'NOTE {"epoch": 1}'
    )  # the session still holds S: the plan gets {} for the failed cell
    assert "S = State(" not in cell.code and "aside(S)" in cell.code  # nothing found: look again
    assert e.restarts == 0


def test_a_lost_session_is_told_by_the_sentinel_not_by_wording():
    e = ScriptedExpert("pick_place")
    e.next_cell(None)
    perceive = e.next_cell(SETUP_OUT)
    assert "def find(" in perceive.code
    # whatever the harness writes about it, the cell printed no note: probe the session
    probe = e.next_cell("(the kernel is gone, nothing was printed)")
    assert probe.code == PROBE
    cell = e.next_cell('NOTE {"epoch": null}')  # no state: a fresh session
    assert e.restarts == 1 and "S = State(robot, 2)" in cell.code
    # the state comes back with the start pose from my notes, and the helpers are defined again
    assert (
        "note(**start(S, poses={'arm': [[0.23, 0.0, 0.12], [0.0, 0.0, -1.0, 0.0]]}))" in cell.code
    )
    # then the task's resume plan: take stock of the hands, measure afresh where the task stands
    assert cell.code.rstrip().endswith("note(**settle(S))") and "def settle(" in cell.code
    compile(cell.code, "<resetup>", "exec")
    nxt = e.next_cell('NOTE {"held": {"arm": false}}')
    assert "note(**verify(S, 'red_cube', 'red cube', 'plate', 'plate'))" in nxt.code
    assert "def find(" in nxt.code  # defined again: the new session has none of my functions
    nxt = e.next_cell('NOTE {"dist": 0.2, "resting": true, "gap": 0.0}')  # not on the plate yet
    assert "note(**perceive(S, {'red_cube': 'red cube', 'plate': 'plate'}" in nxt.code
    assert "def find(" not in nxt.code


def test_a_state_of_another_epoch_counts_as_lost():
    e = ScriptedExpert("pick_place")
    e.next_cell(None)
    e.next_cell(SETUP_OUT)
    e.next_cell("")
    cell = e.next_cell('NOTE {"epoch": 7}')  # e.g. a foreign S, or one from before a restart
    assert e.restarts == 1 and "S = State(robot, 2)" in cell.code


def test_probes_give_up_when_the_session_never_answers():
    e = ScriptedExpert("pick_place")
    e.next_cell(None)
    e.next_cell(SETUP_OUT)
    cells = [e.next_cell("") for _ in range(6)]
    assert [c.code if c else None for c in cells[:3]] == [PROBE] * 3
    assert cells[3] is None and e.done


def test_policy_adapter_reads_task_md_and_tool_outputs():
    task_md = "## Task: pick_place\n\nplace the red cube onto the blue plate\n\n## How judged\n- x"
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": task_md}]},
    ]
    assert instruction_from(messages) == "place the red cube onto the blue plate"
    harness_md = (
        "# TASK: two_arm_lift\n\n## Instruction\n\nlift the long green box with both arms\n\n"
        "## How the final scene is judged\n\n- the box is 10 cm up; see 'red block' in the API"
    )
    assert instruction_from([{"role": "user", "content": harness_md}]) == (
        "lift the long green box with both arms"
    )
    assert outputs_since_last_reply(messages) is None
    pol = ScriptedPolicy()
    pol.reset("pick_place", 1000)
    reply = pol.act(messages, [])
    assert (
        pol.expert is not None
        and pol.expert.instruction == "place the red cube onto the blue plate"
    )
    call = reply.tool_calls[0]
    assert call["function"]["name"] == "python"
    assert "S = State(robot, 1)" in json.loads(call["function"]["arguments"])["code"]
    messages += [
        {"role": "assistant", "content": reply.reasoning, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": SETUP_OUT},
    ]
    assert outputs_since_last_reply(messages) == SETUP_OUT
    reply = pol.act(messages, [])
    assert "perceive(S" in json.loads(reply.tool_calls[0]["function"]["arguments"])["code"]
