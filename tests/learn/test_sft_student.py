"""The whole chain on a tiny model: a real harness episode (fake backend, scripted replay) ->
a dataset row -> ``captain learn sft`` -> the saved student loads as ``--policy transformers``
and, in the harness, replays the episode it was trained on (greedy), finishing with success."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from sft_fixtures import (  # noqa: E402 (sft_fixtures also puts tests/ on the path)
    SOLVE_RED_ON_BLUE,
    TEMPLATES,
    RedOnBlueTask,
    make_row,
    make_stack,
    tiny_model,
    train_tokenizer,
    write_rows,
)

from captain_ros.cli.main import main  # noqa: E402
from captain_ros.harness import Budgets, load_history, read_records, run_episode  # noqa: E402
from captain_ros.harness.episode.context import render  # noqa: E402
from captain_ros.harness.episode.taskmd import SYSTEM_PROMPT  # noqa: E402
from captain_ros.policy.chat_render import TOOL_NOTE  # noqa: E402
from captain_ros.policy.config import PolicyConfig  # noqa: E402
from captain_ros.policy.factory import make_policy  # noqa: E402
from captain_ros.policy.replay import ReplayPolicy  # noqa: E402

pytestmark = [pytest.mark.learn, pytest.mark.slow]
BUDGETS = Budgets(max_requests=6)


def test_a_student_trained_on_an_episode_acts_in_the_harness(tmp_path, capsys):
    torch.set_num_threads(1)
    _, robot = make_stack()
    expert = run_episode(
        RedOnBlueTask(), 0, robot, ReplayPolicy(SOLVE_RED_ON_BLUE), BUDGETS, tmp_path / "expert"
    )
    assert expert.outcome == "success_with_finish"
    history = load_history(tmp_path / "expert" / "trajectory.jsonl")
    row = make_row(history)
    recorded = [
        r["context_sha256"]
        for r in read_records(tmp_path / "expert" / "trajectory.jsonl")
        if r["type"] == "request"
    ]
    assert row["context_sha256"] == recorded  # the row is what the policy saw
    write_rows(tmp_path / "data", [row])
    # A tokenizer whose vocabulary holds the fixed prompt lines (TASK.md is ~12 KB), so that the
    # tiny model trains on the real prompt in seconds.
    fixed = (SYSTEM_PROMPT + "\n" + TOOL_NOTE + "\n" + history.task_md).splitlines()
    tok = train_tokenizer(TEMPLATES["smol"], [json.dumps(row)], 1000, whole_lines=fixed)
    model = tiny_model("qwen2", tok)
    model.config.architectures = [type(model).__name__]
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")

    # 200 steps: at 120 the tiny model memorised the episode only for some prompts (one more
    # failure category in TASK.md's API section was enough to make its first reply prose)
    code = main(
        [
            "learn",
            "sft",
            "--data",
            str(tmp_path / "data"),
            "--base",
            str(tmp_path / "base"),
            "--out",
            str(tmp_path / "student"),
            "--method",
            "full",
            "--max-steps",
            "200",
            "--lr",
            "1e-2",
            "--grad-accum",
            "1",
            "--bf16",
            "off",
            "--val-fraction",
            "0",
            "--no-progress",
            "--save-steps",
            "1000",
        ]
    )
    assert code == 0 and "student in" in capsys.readouterr().out

    policy = make_policy(
        PolicyConfig(
            "transformers",
            model_folder=str(tmp_path / "student"),
            temperature=0.0,
            max_new_tokens=300,
        )
    )
    _, robot = make_stack()
    student = run_episode(RedOnBlueTask(), 0, robot, policy, BUDGETS, tmp_path / "run")
    requests = [
        r for r in read_records(tmp_path / "run" / "trajectory.jsonl") if r["type"] == "request"
    ]
    assert requests[0]["context_sha256"] == recorded[0]  # deployment saw the training context
    ran = [c["code"] for c in requests[0]["calls"]]
    assert ran == [SOLVE_RED_ON_BLUE[0]["code"]]  # the trained first cell, executed
    assert requests[0]["calls"][0]["robot_calls"]
    assert student.outcome == "success_with_finish", [r["content"][:200] for r in requests]
    # The student's whole episode reads, token for token, as the one it was trained on (tool-call
    # ids differ: the harness numbers parsed calls call_0.. while the replay used call_1_0..).
    replayed = render(load_history(tmp_path / "run" / "trajectory.jsonl"))
    chat = policy.chat
    assert chat.render(replayed, row["tools"]) == chat.render(render(history), row["tools"])
