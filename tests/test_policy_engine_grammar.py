"""The tool-call envelope grammar, run by llama.cpp's grammar sampler over SmolLM2's vocabulary:
it admits every reply the scripted expert writes (rendered as a student is trained to write them,
both prompt profiles) and refuses prose, other tools and broken JSON; under it the engine writes
only admitted tokens."""

from __future__ import annotations

import pytest
from engine_models import tiny_llama

from captain_ros.cli.main import main
from captain_ros.harness import load_history
from captain_ros.harness.episode.context import render
from captain_ros.policy.chat_render import render_chat
from captain_ros.policy.engines import EngineSettings
from captain_ros.policy.engines.grammar import ENVELOPE, GrammarGate
from captain_ros.policy.engines.llamacpp import LlamaCppChat

pytestmark = pytest.mark.learn  # llama.cpp, and torch for the conversion

EPISODES = (("pick_place", "default"), ("stack", "helpers"))


@pytest.fixture(scope="module")
def eng():
    _, gguf = tiny_llama("f32")
    return LlamaCppChat(
        gguf,
        EngineSettings(max_new_tokens=40, temperature=1.0, threads=1, seed=3),
        grammar="envelope",
    )


@pytest.fixture(scope="module")
def expert_replies(tmp_path_factory, eng):
    """Every assistant turn of scripted-expert episodes, as the renderer writes it."""
    replies = []
    for task, profile in EPISODES:
        out = tmp_path_factory.mktemp(f"{task}_{profile}")
        rc = main(
            [
                "run",
                "--task",
                task,
                "--seed",
                "0",
                "--backend",
                "fake",
                "--profile",
                profile,
                "--no-bag",
                "--json",
                "--overwrite",
                "--out",
                str(out),
            ]
        )
        assert rc == 0
        msgs = render(load_history(out / "trajectory.jsonl"))
        for i, m in enumerate(msgs):
            if m["role"] == "assistant":
                head = render_chat(eng.tokenizer, msgs[:i], add_generation_prompt=True)
                full = render_chat(eng.tokenizer, msgs[: i + 1], add_generation_prompt=False)
                assert full.startswith(head)
                replies.append(full[len(head) :].split("<|im_end|>")[0])
    return replies


def admitted(eng: LlamaCppChat, text: str) -> bool:
    """Whether the envelope admits ``text`` followed by the end of the turn."""
    gate = GrammarGate(eng.vocab, ENVELOPE, eng.n_vocab)
    try:
        for tok in eng.tokenize(text):
            if not gate.allows(tok):
                return False
            gate.accept(tok)
        return gate.allows(eng.llm.token_eos())
    finally:
        gate.close()


@pytest.mark.slow  # two scripted-expert episodes on the fake backend
def test_every_expert_reply_is_admitted(eng, expert_replies):
    assert len(expert_replies) >= 8
    assert any(
        "\n" in r.split("<tool_call>")[0] or r.startswith("<tool_call>") for r in expert_replies
    )
    refused = [r for r in expert_replies if not admitted(eng, r)]
    assert not refused, refused[:2]


@pytest.mark.parametrize(
    "reply",
    [
        "I will now pick up the red cube and place it on the blue one.",
        "Done.",
        '<tool_call>\n{"name": "shell", "arguments": {"code": "ls"}}\n</tool_call>',
        '<tool_call>\n{"name": "python", "arguments": {"code": "robot.observe()}}\n</tool_call>',
        'Thinking.\n<tool_call>\n{"name": "python", "arguments": {"code": "x = 1"}}',
    ],
)
def test_prose_other_tools_and_broken_calls_are_refused(eng, reply):
    assert not admitted(eng, reply)


@pytest.mark.parametrize(
    "reply",
    [
        '<tool_call>\n{"name": "python", "arguments": {"code": "robot.observe()"}}\n</tool_call>',
        'Look first; x < 3 holds.\n<tool_call>\n{"name": "python", "arguments": {"code": "a = \\"\\u00e9\\"\\nprint(a)"}}\n</tool_call>',
        "Run it.\n```python\nprint(robot.observe())\n```",
    ],
)
def test_well_formed_calls_are_admitted(eng, reply):
    assert admitted(eng, reply)


def test_the_engine_writes_only_what_the_grammar_admits(eng):
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "Pick the cube."}]
    eng.reset()
    gen = eng.generate(msgs)
    assert eng.last_forced > 0  # a random model's free choice is mostly outside the envelope
    gate = GrammarGate(eng.vocab, ENVELOPE, eng.n_vocab)
    try:
        for tok in gen.completion_ids:
            assert gate.allows(tok)
            gate.accept(tok)
    finally:
        gate.close()
