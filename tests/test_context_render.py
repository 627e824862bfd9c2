"""The deterministic context renderer: truncation, the 12-image window, compaction."""

from __future__ import annotations

import copy
import json

from captain_ros.harness.episode.context import (
    ContextConfig,
    approx_tokens,
    context_tokens,
    render,
    truncate_output,
    turn_commands,
    without_receipts,
)
from captain_ros.harness.record.history import History, ImageRef, ToolCall, ToolOutput, Turn


def make_history(n_turns: int, out_chars: int = 100, images_per_turn: int = 1) -> History:
    turns = []
    for i in range(1, n_turns + 1):
        code = f"r{i} = robot.observe()\nrobot.move_to([0.3, 0.0, 0.{i % 9 + 1}])\nimage(r{i}.value['handle'])"
        imgs = tuple(
            ImageRef(f"images/r{i:03d}_{k}.png", "head", f"obs_{i}") for k in range(images_per_turn)
        )
        out = f"[receipt] move_to: reached {i} " + "x" * out_chars
        turns.append(
            Turn(
                i,
                f"thinking {i}",
                (ToolCall(f"call_{i}", code),),
                (ToolOutput(f"call_{i}", out, imgs),),
            )
        )
    initial = (
        ImageRef("images/r000_initial_head.png", "head", "obs_1"),
        ImageRef("images/r000_initial_wrist.png", "wrist", "obs_1"),
    )
    return History("SYSTEM", "# TASK\nput red on blue", initial, tuple(turns))


def images(msgs):
    return [
        p["image"]
        for m in msgs
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "image"
    ]


def test_structure_of_rendered_messages():
    msgs = render(make_history(2))
    assert [m["role"] for m in msgs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "user",
    ]
    assert msgs[0]["content"] == "SYSTEM" and msgs[1]["content"][0]["text"].startswith("# TASK")
    call = msgs[2]["tool_calls"][0]
    assert (
        call["function"]["name"] == "python"
        and "robot.observe" in json.loads(call["function"]["arguments"])["code"]
    )
    assert msgs[3]["tool_call_id"] == call["id"] and "[receipt]" in msgs[3]["content"]


def test_rendering_is_deterministic_and_pure():
    h = make_history(10, out_chars=3000)
    h_copy = copy.deepcopy(h)
    a = render(h, ContextConfig(compact_at_tokens=3000))
    b = render(h_copy, ContextConfig(compact_at_tokens=3000))
    assert json.dumps(a) == json.dumps(b) and h == h_copy


def test_tool_outputs_are_truncated_keeping_head_and_tail():
    text = "HEAD " + "y" * 20000 + " [receipt] the tail receipt"
    cut = truncate_output(text, 500)
    assert cut.startswith("HEAD") and cut.endswith("the tail receipt")
    assert "characters truncated" in cut and approx_tokens(cut) <= 520
    assert truncate_output("short", 500) == "short"
    msgs = render(make_history(1, out_chars=50000), ContextConfig(max_tool_output_tokens=256))
    assert approx_tokens(msgs[3]["content"]) <= 280


def test_only_the_12_most_recent_images_are_kept():
    msgs = render(make_history(8, images_per_turn=2))  # 2 initial + 16
    kept = images(msgs)
    assert len(kept) == 12
    assert (
        kept[-1] == "images/r008_1.png"
        and "images/r002_1.png" not in kept
        and kept[0] == "images/r003_0.png"
    )
    omitted = [
        p["text"]
        for m in msgs
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "text" and p["text"].startswith("[image omitted")
    ]
    assert len(omitted) == 6
    assert len(images(render(make_history(8, images_per_turn=2), ContextConfig(max_images=3)))) == 3
    assert (
        images(render(make_history(1), image_root="/ep"))[0] == "/ep/images/r000_initial_head.png"
    )


def test_no_compaction_below_the_threshold():
    msgs = render(make_history(5))
    assert not any(
        isinstance(m["content"], str) and "Context compacted" in m["content"] for m in msgs
    )


def test_compaction_keeps_task_and_recent_turns_and_lists_removed_commands():
    h = make_history(30, out_chars=2000)
    cfg = ContextConfig(compact_at_tokens=6000, keep_recent_turns=2)
    msgs = render(h, cfg)
    assert context_tokens(msgs, cfg) <= 6000
    assert msgs[0]["content"] == "SYSTEM" and msgs[1]["content"][0]["text"] == h.task_md
    notice = msgs[2]["content"]
    assert notice.startswith("[Context compacted: requests 1-")
    assert (
        "- request 1: robot.observe, robot.move_to" in notice and "scene may have changed" in notice
    )
    removed = int(notice.split("requests 1-")[1].split(" ")[0])
    # the most recent turns are verbatim
    kept_turns = [m for m in msgs if m["role"] == "assistant"]
    assert kept_turns[-1]["content"] == "thinking 30" and len(kept_turns) == 30 - removed
    full = render(h, ContextConfig(compact_at_tokens=10**9))
    assert full[-3:] == msgs[-3:]
    # the recent turns are never removed even if they alone exceed the threshold
    tiny = render(h, ContextConfig(compact_at_tokens=10, keep_recent_turns=2))
    assert [m["content"] for m in tiny if m["role"] == "assistant"] == [
        "thinking 29",
        "thinking 30",
    ]


def test_compaction_is_turn_by_turn_and_monotone():
    h = make_history(20, out_chars=1500)
    counts = []
    for limit in (40000, 20000, 10000, 5000):
        msgs = render(h, ContextConfig(compact_at_tokens=limit))
        counts.append(sum(1 for m in msgs if m["role"] == "assistant"))
        assert context_tokens(msgs) <= limit
    assert counts == sorted(counts, reverse=True) and counts[0] == 20


def test_turn_commands_and_notices():
    t = Turn(
        4,
        "r",
        (
            ToolCall("a", "x = 1\nprint(x)"),
            ToolCall("b", "robot.observe(); robot.observe(); finish()"),
        ),
    )
    assert turn_commands(t) == "`x = 1`; robot.observe, finish"
    malformed = Turn(5, "oops", (), (), "Malformed tool call: empty code")
    msgs = render(History("S", "T", (), (malformed,)))
    assert msgs[-1] == {"role": "user", "content": "[harness] Malformed tool call: empty code"}
    assert "tool_calls" not in msgs[-2]


def test_without_receipts_keeps_what_the_code_printed_and_counts_the_receipts():
    text = (
        'NOTE {"held": true}\n[receipt] jaw arm: blocked\n[receipt] move_to arm: reached\n'
        "[... 3 more receipts not shown]"
    )
    assert without_receipts(text) == 'NOTE {"held": true}\n[5 receipts in the episode record]'
    assert without_receipts("Traceback (most recent call last):\nValueError: x") == (
        "Traceback (most recent call last):\nValueError: x"
    )
    assert without_receipts("[receipt] finish: ACCEPTED") == "[1 receipt in the episode record]"
    lean = render(make_history(2), ContextConfig(receipts=False))
    full = render(make_history(2))
    assert "[receipt]" in full[3]["content"] and "[receipt]" not in lean[3]["content"]
    assert lean[3]["content"].endswith("[1 receipt in the episode record]")
    assert [m["role"] for m in lean] == [m["role"] for m in full]


def test_the_student_profile_leaves_receipts_out_and_the_others_keep_them():
    from captain_ros.harness.episode.profiles import PROFILES

    assert not PROFILES["student"].context.receipts
    assert all(p.context.receipts for n, p in PROFILES.items() if n != "student")
