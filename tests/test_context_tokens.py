"""Context limits counted in the student's own tokens, and the ``student`` prompt profile.

The small profiles count with SmolLM2's tokenizer (packaged, read by the ``tokenizers`` library),
so that compaction keeps every prompt inside SmolLM2's 8,192 positions. The long-episode test
runs the real scripted expert in MuJoCo on each of the six tasks, stretches its history to five
times its length with its own turns (receipts and all), and renders every request through the
model's real chat template.
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from captain_ros.core.errors import InvalidArgumentError, UnknownNameError
from captain_ros.harness.episode.context import ContextConfig, context_tokens, render
from captain_ros.harness.episode.profiles import PROFILES, get_profile
from captain_ros.harness.episode.tokens import approx_tokens, token_counter
from captain_ros.harness.record.history import History
from captain_ros.harness.record.recorded import RecordedEpisode

TASKS = ("pick_place", "stack", "restack", "open_drawer", "two_arm_lift", "insertion")
MAX_NEW_TOKENS = 300  # the longest reply budget the students run with
SAMPLES = (
    "place the red cube onto the cyan plate",
    "[receipt] move_to(arm=left) executed 0.412 m in 1.94 s; final error 0.8 mm, 0.3 deg; "
    "peak force 2.1 N (limit 15.0 N); contact: none",
    "note(**descend(S, 'red_cube'))\nr = robot.grasp('left', width_m=0.042)\nprint(r.success)",
    "{'x': 0.5312, 'y': -0.1275, 'z': 0.0215} ± 0.004 m — Ω ü 日本",
)


@functools.cache
def _smollm2_tokenizer():  # noqa: ANN202 - transformers tokenizer
    from transformers import AutoTokenizer

    from captain_ros.policy.transformers_chat import smollm2_folder

    folder, gguf = smollm2_folder()
    return AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf)


def test_unknown_counter_is_refused_by_name():
    with pytest.raises(UnknownNameError, match="token counter 'gpt9'"):
        token_counter("gpt9")
    assert token_counter("approx") is approx_tokens


def test_records_without_a_tokenizer_field_render_as_they_were_counted():
    old = {
        "max_tool_output_tokens": 400,
        "max_images": 4,
        "context_limit_tokens": 8192,
        "compact_at_tokens": 7000,
        "keep_recent_turns": 3,
        "image_tokens": 256,
    }
    assert ContextConfig(**old).tokenizer == "approx"
    assert get_profile("helpers").context.tokenizer == "smollm2"
    assert (
        ContextConfig(**get_profile("student").context.to_dict()) == get_profile("student").context
    )
    assert ContextConfig(**old).framing == "estimate"  # counted as it was run


@pytest.mark.learn
def test_packaged_smollm2_counter_equals_the_models_tokenizer():
    tok = _smollm2_tokenizer()
    count = token_counter("smollm2")
    for text in SAMPLES:
        assert count(text) == len(tok(text, add_special_tokens=False)["input_ids"]) > 0
    # receipts split finer than the 4-characters estimate: the defect this counter fixes
    assert count(SAMPLES[1]) > approx_tokens(SAMPLES[1])


def test_student_task_md_keeps_the_task_and_drops_the_reference():
    from captain_ros.harness.episode.budgets import Budgets
    from captain_ros.harness.episode.profiles import library_task_md
    from captain_ros.harness.episode.taskmd import render_task_md
    from captain_ros.policy.expert.library import LIBRARY_HEADING
    from captain_ros.tasks import get_task

    task = get_task("pick_place")
    full = render_task_md(task, 3, Budgets(), True, library_task_md(get_profile("helpers")))
    short = render_task_md(task, 3, Budgets(), True, library_task_md(get_profile("student")), False)
    assert "## Robot API" in full and "## Robot API" not in short
    assert task.instruction(3) in short and "Budgets: requests" in short
    assert (
        LIBRARY_HEADING in short and "`descend`" in short
    )  # names only: the expert still sees them
    count = token_counter("smollm2")
    assert count(short) < count(full) / 2


def test_the_hard_limit_drops_recent_turns_before_the_window_overflows(tmp_path):
    from captain_ros.harness.record.history import ToolCall, ToolOutput, Turn

    big = " ".join(f"{i * 0.0137:.4f}" for i in range(200))  # 1,399 smollm2 tokens (350 approx)
    turns = tuple(
        Turn(i, f"step {i}", (ToolCall(f"c{i}", "print(1)"),), (ToolOutput(f"c{i}", big),), "")
        for i in range(1, 7)
    )
    history = History("sys", "task", (), turns)
    cfg = ContextConfig(
        max_tool_output_tokens=2048,
        context_limit_tokens=4000,
        compact_at_tokens=3000,
        keep_recent_turns=3,
        tokenizer="smollm2",
        reply_reserve_tokens=1000,
    )
    msgs = render(history, cfg)
    kept = [m for m in msgs if m["role"] == "tool"]
    assert len(kept) == 2  # three recent turns need ~4.2k > 3,000 = 4,000 - 1,000
    from captain_ros.harness.episode.context import context_tokens

    assert context_tokens(msgs, cfg) <= cfg.hard_limit_tokens
    # in a window with room for them, the three recent turns stay
    roomy = replace(cfg, context_limit_tokens=6000)
    assert len([m for m in render(history, roomy) if m["role"] == "tool"]) == 3
    # counted with the 4-characters estimate the same turns look small: nothing is dropped
    assert (
        len([m for m in render(history, replace(cfg, tokenizer="approx")) if m["role"] == "tool"])
        == 6
    )


def _short_turns(n: int) -> tuple:
    """``n`` short turns as an off-plan student writes them: one helper call and one NOTE line
    each, so the template's markup is a large share of every turn."""
    from captain_ros.harness.record.history import ToolCall, ToolOutput, Turn

    return tuple(
        Turn(
            i,
            f"The peg is not in the hole yet; re-measure the block and try insert again ({i}).",
            (ToolCall(f"call_{i}", f"note(**insert(S, 'peg', 'box', dz={i * 0.001:.3f}))"),),
            (ToolOutput(f"call_{i}", f'NOTE {{"inserted": false, "depth": {i * 0.0007:.4f}}}'),),
            "Malformed tool call: unterminated string" if i % 9 == 0 else "",
        )
        for i in range(1, n + 1)
    )


@pytest.mark.learn
def test_student_prompts_are_counted_exactly_as_the_template_writes_them():
    """The session-27 defect: 55 short turns reached 8,223 SmolLM2 tokens while the per-message
    estimate counted 6,975, so compaction never started and llama.cpp refused the prompt."""
    from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, context_tokens
    from captain_ros.harness.record.history import ImageRef
    from captain_ros.policy.chat_render import render_chat

    tok = _smollm2_tokenizer()
    cfg = get_profile("student").context
    assert cfg.framing == "chatml-tools"
    images = (ImageRef("obs_1", "head", "images/a.png"), ImageRef("obs_1", "wrist", "images/b.png"))
    history = History(
        "You control a robot.",
        "# TASK: insertion\nPut the peg in the box.",
        images,
        _short_turns(80),
    )
    longest, compacted = 0, False
    for t in range(1, len(history.turns) + 2):
        msgs = render(history.upto(t), cfg)
        compacted |= any("[Context compacted" in str(m.get("content")) for m in msgs)
        exact = len(
            tok(render_chat(tok, msgs, [PYTHON_TOOL_SCHEMA]), add_special_tokens=False)["input_ids"]
        )
        assert context_tokens(msgs, cfg) == exact, t
        longest = max(longest, exact)
    assert compacted and longest <= cfg.hard_limit_tokens
    # the old estimate undercounts these turns: the same history outgrows the window
    old = replace(cfg, framing="estimate")
    over = []
    for t in range(40, len(history.turns) + 2):
        msgs = render(history.upto(t), old)
        text = render_chat(tok, msgs, [PYTHON_TOOL_SCHEMA])
        exact = len(tok(text, add_special_tokens=False)["input_ids"])
        if exact > old.hard_limit_tokens:
            over.append((t, exact, context_tokens(msgs, old)))
    assert over and all(counted <= old.compact_at_tokens for _, _, counted in over), over[:3]


def test_compaction_in_blocks_keeps_the_prompt_growing_by_appending():
    """Removing just enough turns at each request rewrites the prompt after the task every time
    (an engine's kept prefix then ends there); removing whole blocks keeps the same turns gone for
    several requests, so most requests only append."""
    cfg = get_profile("student").context
    assert cfg.compact_block_turns == 8
    history = History("You control a robot.", "# TASK: insertion", (), _short_turns(120))

    def rewrites(config: ContextConfig) -> tuple[int, int]:
        previous: list = []
        rewritten = compacted = 0
        for t in range(1, len(history.turns) + 2):
            msgs = render(history.upto(t), config)
            assert context_tokens(msgs, config) <= config.hard_limit_tokens
            if any("[Context compacted" in str(m.get("content")) for m in msgs):
                compacted += 1
                rewritten += msgs[: len(previous)] != previous
            previous = msgs
        return rewritten, compacted

    one, compacted = rewrites(replace(cfg, compact_block_turns=1))
    blocks, compacted_b = rewrites(cfg)
    assert compacted > 20 and compacted_b >= compacted
    assert one >= compacted - 2  # nearly every compacted request rewrites the prompt
    # a rewrite per block of 8 turns (these short turns go ~1.4 a request: the compaction
    # notice lists what each removed turn ran): measured 11 rewrites against 60
    assert 0 < 5 * blocks <= one
    # never into the most recent turns, and 1 is the old rule
    assert replace(cfg, compact_block_turns=1000).keep_recent_turns == 3
    msgs = render(history.upto(60), replace(cfg, compact_block_turns=1000))
    assert sum(m["role"] == "assistant" for m in msgs) >= 3
    with pytest.raises(InvalidArgumentError, match="compact_block_turns"):
        ContextConfig(compact_block_turns=0)


def test_an_unknown_framing_is_refused_by_name():
    with pytest.raises(UnknownNameError, match="context framing 'llama9'"):
        ContextConfig(framing="llama9")


def _expert_episode(task_name: str, seed: int, profile: str, out: Path) -> RecordedEpisode:
    from captain_ros.evaluation.episode import build_robot
    from captain_ros.harness.episode import EpisodeOptions, run_episode
    from captain_ros.harness.record.backend_source import BackendPrivileged
    from captain_ros.policy.factory import make_policy

    task, backend, service = build_robot(task_name, seed)
    try:
        hs = run_episode(
            task,
            seed,
            service,
            make_policy("scripted"),
            None,
            out,
            options=EpisodeOptions(profile=profile),
            privileged=BackendPrivileged(backend),
        )
    finally:
        backend.close()
    assert hs.strict_success, f"{task_name} {seed}: the expert failed ({hs.outcome})"
    return RecordedEpisode.load(out)


@pytest.mark.slow
@pytest.mark.learn
@pytest.mark.parametrize(("profile", "stretch"), [("helpers", 5), ("student", 15)])
def test_long_episode_of_each_task_stays_inside_smollm2_positions(tmp_path, profile, stretch):
    from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA
    from captain_ros.policy.chat_render import render_chat

    tok = _smollm2_tokenizer()
    cfg = get_profile(profile).context
    window = cfg.context_limit_tokens
    for task_name in TASKS:
        rec = _expert_episode(task_name, 2, profile, tmp_path / task_name)
        assert rec.start["context"]["tokenizer"] == "smollm2"
        base = rec.history()
        # the expert's own turns repeated and renumbered until compaction must happen: an off-plan
        # episode's length with real outputs (the expert needs 8-20 requests; the budget allows
        # 60; the student's outputs leave the receipts out, so it needs more turns to compact)
        turns = tuple(replace(t, index=i + 1) for i, t in enumerate(base.turns * stretch))
        history = replace(base, turns=turns)
        longest, compacted = 0, False
        for t in range(1, len(turns) + 2):
            msgs = render(history.upto(t), cfg)
            compacted |= any("[Context compacted" in str(m.get("content")) for m in msgs)
            prompt = render_chat(tok, msgs, [PYTHON_TOOL_SCHEMA])
            longest = max(longest, len(tok(prompt, add_special_tokens=False)["input_ids"]))
        assert compacted, task_name
        assert longest + MAX_NEW_TOKENS <= window, f"{task_name}: {longest} prompt tokens"


def test_every_profile_is_offered_by_the_cli():
    from captain_ros.cli.main import build_parser

    run = build_parser()._subparsers._group_actions[0].choices["run"]  # noqa: SLF001
    choices = next(a.choices for a in run._actions if a.dest == "profile")  # noqa: SLF001
    assert set(PROFILES) <= set(choices)


def test_finish_turn_weight_reaches_the_dataset_rows(tmp_path):
    from captain_ros.learn.data import build_dataset
    from captain_ros.learn.data.sources import DatasetError

    rec = _expert_episode("pick_place", 4, "student", tmp_path / "ep")
    finishing = [
        int(r["t"])
        for r in rec.requests
        if any("finish(" in c.get("code", "") for c in r.get("calls", []))
    ]
    assert finishing == [rec.n_requests]
    weights = {}
    for w in (1.0, 4.0):
        report = build_dataset(
            [tmp_path / "ep"], tmp_path / f"ds{w}", validation_fraction=0.0, finish_weight=w
        )
        assert report.profile == "student" and report.finish_weight == w
        rows = [
            json.loads(line)
            for line in (tmp_path / f"ds{w}" / "train.jsonl").read_text().splitlines()
        ]
        weights[w] = {
            t: x for r in rows for t, x in zip(r["requests"], r["weights"], strict=True) if t
        }
    assert weights[1.0][rec.n_requests] == 1.0 and weights[4.0][rec.n_requests] == 4.0
    others = [t for t in weights[1.0] if t != rec.n_requests]
    assert others and all(weights[4.0][t] == weights[1.0][t] == 1.0 for t in others)
    with pytest.raises(DatasetError, match="finish-weight"):
        build_dataset([tmp_path / "ep"], tmp_path / "bad", finish_weight=float("nan"))


def _requests(*codes: str) -> list[dict]:
    return [{"calls": [{"code": c}]} for c in codes]


def test_branch_turns_are_where_the_same_two_calls_go_on_differently():
    from captain_ros.learn.data.branches import branch_turns

    start, lift = "note(**start(S))", "note(**close_lift(S, 'blue_cube'))"
    descend = "note(**descend(S, 'blue_cube'))"
    restack = _requests(start, "perceive(S, {'a': 'a'})", descend, lift, "note(**free_spot(S))")
    stack = _requests(
        start, "perceive(S, {'b': 'b'}, dest=('b', 'c'))", descend, lift, "perceive(S, keep=True)"
    )
    # object names are not shapes: the same plan on other cubes branches nowhere
    assert branch_turns([restack, _requests(*(c.replace("blue", "red") for c in [
        start, "perceive(S, {'a': 'a'})", descend, lift, "note(**free_spot(S))"
    ]))]) == [frozenset(), frozenset()]  # fmt: skip
    # after (descend, close_lift) restack puts the cube aside, stack re-measures its destination;
    # the whole histories differ from request 2 on, and request 2 itself is a branch
    assert branch_turns([restack, stack]) == [frozenset({1, 4}), frozenset({1, 4})]
    assert branch_turns([restack]) == [frozenset()]


@pytest.mark.slow
@pytest.mark.learn
def test_branch_turn_weight_reaches_the_dataset_rows(tmp_path):
    from captain_ros.learn.data import build_dataset
    from captain_ros.learn.data.sources import DatasetError

    eps = {t: _expert_episode(t, 4, "student", tmp_path / t) for t in ("restack", "stack")}
    codes = {
        t: [" ".join(c["code"] for c in r["calls"]) for r in e.requests] for t, e in eps.items()
    }
    assert "free_spot(" in codes["restack"][4] and "keep=True" in codes["stack"][4]

    def weights(**kw: float) -> tuple[dict, dict]:
        out = tmp_path / f"ds{sorted(kw.items())}"
        report = build_dataset(
            [tmp_path / "restack", tmp_path / "stack"], out, validation_fraction=0.0, **kw
        )
        rows = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
        return report.to_dict(), {
            (r["task"], t): w
            for r in rows
            for t, w in zip(r["requests"], r["weights"], strict=True)
            if t
        }

    plain_report, plain = weights()
    report, weighted = weights(branch_weight=3.0, finish_weight=2.0)
    assert report["branch_weight"] == 3.0 and report["branch_turns"] == plain_report["branch_turns"]
    assert set(report["branch_turns"]) == {"restack", "stack"}
    # the first cube's destination (request 5) is a branch turn of both tasks; request 1 of none
    for task in ("restack", "stack"):
        assert plain[(task, 5)] == 1.0 and weighted[(task, 5)] == 3.0
        assert weighted[(task, 1)] == 1.0
        last = eps[task].n_requests  # finish(): the larger of the two weights where both apply
        assert weighted[(task, last)] in (2.0, 3.0) and plain[(task, last)] == 1.0
    changed = {k for k in plain if plain[k] != weighted[k]}
    assert sum(report["branch_turns"].values()) + 2 >= len(changed) > 2
    with pytest.raises(DatasetError, match="branch-weight"):
        build_dataset([tmp_path / "restack"], tmp_path / "bad", branch_weight=0.0)
