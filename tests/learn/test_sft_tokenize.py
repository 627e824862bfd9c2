"""Rows -> token sequences: assistant-only labels, per-turn weights, whole-episode packing,
windows at turn boundaries, token-for-token parity with what the deployed policy renders, and
clear errors on bad rows."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from sft_fixtures import TEMPLATES, episode_history, make_row, save_tiny, train_tokenizer  # noqa: E402

from captain_ros.harness.episode.context import render  # noqa: E402
from captain_ros.learn.rows import DatasetError, load_rows, parse_row, split_rows  # noqa: E402
from captain_ros.learn.tokenize import (  # noqa: E402
    IGNORE,
    TokenizeStats,
    plan_windows,
    tokenize_row,
)
from captain_ros.policy.chat_render import PRELUDE_PATH, TOOL_NOTE, render_chat  # noqa: E402

pytestmark = pytest.mark.learn


@pytest.fixture(scope="module", params=["smol", "qwen"])
def tok(request):
    return train_tokenizer(TEMPLATES[request.param])


def _row(n=4, weights=None, **kw):
    return parse_row(make_row(episode_history(n), weights, **kw), "rows.jsonl:1")


def _spans(seq):
    """Contiguous labelled runs of a sequence, as token-id lists."""
    runs, cur = [], []
    for tid, lab in zip(seq.input_ids, seq.labels, strict=True):
        if lab != IGNORE:
            assert lab == tid
            cur.append(tid)
        elif cur:
            runs.append(cur)
            cur = []
    return runs + ([cur] if cur else [])


def test_only_the_agents_tokens_carry_labels(tok):
    row = _row(4, [1.0, 0.0, 1.0, 0.5])
    stats = TokenizeStats()
    (seq,) = tokenize_row(tok, row, 4096, stats)  # the whole episode is one sequence
    history = episode_history(4)
    labelled = [tok.decode(run) for run in _spans(seq)]
    kept = [t for t, w in zip(history.turns, row.weights, strict=True) if w > 0]
    assert len(labelled) == len(kept) == 3
    for text, turn in zip(labelled, kept, strict=True):
        assert text.startswith(turn.reasoning)  # reasoning ...
        assert json.dumps(turn.calls[0].code)[1:-12] in text  # ... and the tool call's code
        assert text.endswith("</tool_call><|im_end|>")  # the end-of-turn token, not the newline
        for out in turn.outputs:
            assert out.text not in text  # tool outputs are context
    all_labels = tok.decode(
        [t for t, lab in zip(seq.input_ids, seq.labels, strict=True) if lab != IGNORE]
    )
    for unlabelled in (
        "robot manipulation agent",
        "# TASK: red_on_blue",
        "<|im_start|>",
        "ok 1",
        "Grasp from above.",
    ):  # system, task, scaffolding, output, w=0 turn
        assert unlabelled not in all_labels
    weights = {w for w, lab in zip(seq.weights, seq.labels, strict=True) if lab != IGNORE}
    assert weights == {1.0, 0.5}
    assert all(w == 0 for w, lab in zip(seq.weights, seq.labels, strict=True) if lab == IGNORE)
    assert stats.turns == 4 and stats.turns_masked == 1 and stats.parity_mismatches == 0
    assert stats.supervised_tokens == seq.supervised_tokens and stats.sequences == 1


def test_training_text_is_what_the_deployed_policy_renders(tmp_path):
    """Token for token: at every request t, the prefix of the training sequence before a_t is
    what TransformersChat tokenizes for the messages the harness renders at request t."""
    torch = pytest.importorskip("torch")
    from captain_ros.policy.transformers_chat import TransformersChat

    torch.set_num_threads(1)
    for template in ("smol", "qwen"):
        folder = save_tiny(tmp_path / template, "qwen2", template)
        chat = TransformersChat(folder, device="cpu", max_new_tokens=2, temperature=0)
        history = episode_history(4)
        row = parse_row(make_row(history), "r:1")
        (seq,) = tokenize_row(chat.tokenizer, row, 4096)
        starts = [
            i
            for i in range(len(seq.labels))
            if seq.labels[i] != IGNORE and (i == 0 or seq.labels[i - 1] == IGNORE)
        ]
        for t, start in zip(range(1, 5), starts, strict=True):
            deployed = chat.tokenizer(
                chat.render(render(history.upto(t)), row.tools), add_special_tokens=False
            )["input_ids"]
            assert list(seq.input_ids[:start]) == list(deployed)
        if template == "smol":
            assert TOOL_NOTE in chat.render(render(history), row.tools)


def test_tool_prelude_and_python_tool_note_agree():
    assert TOOL_NOTE.replace('"', '\\"') in PRELUDE_PATH.read_text()


def test_long_episodes_split_at_turn_boundaries_with_history_as_prefix(tok):
    row = _row(8)
    (whole,) = tokenize_row(tok, row, 100_000)
    max_len = len(whole.input_ids) // 3
    stats = TokenizeStats()
    seqs = tokenize_row(tok, row, max_len, stats)
    assert len(seqs) > 1 and all(len(s.input_ids) <= max_len for s in seqs)
    assert stats.truncated_sequences == sum(s.truncated for s in seqs) >= 1
    assert not seqs[0].truncated and seqs[0].input_ids == whole.input_ids[: len(seqs[0].input_ids)]
    runs = [tuple(r) for s in seqs for r in _spans(s)]
    assert runs == [tuple(r) for r in _spans(whole)]  # every turn labelled exactly once
    for s in seqs[1:]:
        first = next(i for i, lab in enumerate(s.labels) if lab != IGNORE)
        assert first >= max_len // 2 or not s.truncated  # at least half a window of history
    assert sorted(r for s in seqs for r in s.requests) == list(range(1, 9))


def test_a_turn_longer_than_the_window_is_dropped_and_counted(tok):
    row = parse_row(make_row(episode_history(2, outputs=("short", "short"))), "r:1")
    (whole,) = tokenize_row(tok, row, 100_000)
    longest = max(len(r) for r in _spans(whole))
    stats = TokenizeStats()
    seqs = tokenize_row(tok, row, longest - 1, stats)
    assert stats.turns_too_long >= 1
    assert sum(len(_spans(s)) for s in seqs) == 2 - stats.turns_too_long


def test_plan_windows():
    windows, too_long = plan_windows([(10, 20), (30, 40), (60, 70), (75, 200)], 64)
    assert windows[0] == (0, 40, [0, 1])
    assert windows[1] == (70 - 64, 70, [2])
    assert too_long == [3]


def test_non_append_only_template_starts_a_new_sequence():
    # A template that shows the reasoning of the LAST assistant turn only (like Qwen3's <think>).
    template = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' and "
        "not loop.last %}(earlier turn){% else %}{{ m.content }}{% endif %}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    tok = train_tokenizer(template)
    stats = TokenizeStats()
    seqs = tokenize_row(tok, _row(3), 100_000, stats)
    assert stats.template_breaks == 2 and len(seqs) == 3


def test_rows_with_only_masked_turns_give_nothing(tok):
    stats = TokenizeStats()
    assert tokenize_row(tok, _row(2, [0.0, 0.0]), 4096, stats) == []
    assert stats.rows_without_labels == 1 and stats.sequences == 0


def test_assistant_content_as_parts_and_images_flatten_like_deployment(tok):
    msgs = render(episode_history(2))
    msgs[1] = {
        "role": "user",
        "content": [{"type": "text", "text": "look"}, {"type": "image", "image": "images/a.png"}],
    }
    text = render_chat(tok, msgs, [{"type": "function", "function": {"name": "python"}}])
    assert "[image attached; this model cannot see images]" in text


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("weights"), "'weights' must be a list"),
        (lambda r: r["weights"].append(1.0), "one entry per assistant message"),
        (lambda r: r["weights"].__setitem__(0, -1), "not a finite number >= 0"),
        (lambda r: r["weights"].__setitem__(0, "x"), "not a number"),
        (lambda r: r["messages"][0].__setitem__("role", "robot"), "has role 'robot'"),
        (lambda r: r.__setitem__("messages", []), "non-empty list"),
        (lambda r: r["messages"][2].__setitem__("tool_calls", [{"function": {}}]), "function.name"),
        (lambda r: r["messages"][1].__setitem__("content", 3), "content must be a string"),
    ],
)
def test_bad_rows_name_the_file_line_and_problem(tmp_path, mutate, message):
    row = make_row(episode_history(2))
    mutate(row)
    (tmp_path / "train.jsonl").write_text(
        json.dumps(make_row(episode_history(2))) + "\n" + json.dumps(row) + "\n"
    )
    with pytest.raises(DatasetError, match=message) as err:
        load_rows(tmp_path)
    assert f"{tmp_path / 'train.jsonl'}:2" in str(err.value)


def test_bad_dataset_folders(tmp_path):
    with pytest.raises(DatasetError, match="no such dataset"):
        load_rows(tmp_path / "missing")
    with pytest.raises(DatasetError, match=r"no \*\.jsonl"):
        load_rows(tmp_path)
    (tmp_path / "train.jsonl").write_text("\n")
    with pytest.raises(DatasetError, match="has no rows"):
        load_rows(tmp_path)
    (tmp_path / "train.jsonl").write_text("{not json\n")
    with pytest.raises(DatasetError, match=r"train.jsonl:1: not valid JSON"):
        load_rows(tmp_path)


def test_splits_are_by_episode_and_other_splits_are_never_trained_on():
    rows = [_row(1, seed=s) for s in range(20)] + [_row(1, seed=99, split="test")]
    train, val = split_rows(rows, 0.1, seed=0)
    assert len(val) == 2 and len(train) == 18
    assert not {r.episode_id for r in train} & {r.episode_id for r in val}
    assert all(r.split == "train" for r in train + val)
    explicit = rows + [_row(1, seed=50, split="val")]
    assert [r.episode_id for r in split_rows(explicit, 0.1)[1]] == ["red_on_blue:50"]
    with pytest.raises(DatasetError, match="no rows with split 'train'"):
        split_rows([_row(1, split="test")])
