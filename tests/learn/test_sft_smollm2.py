"""Smoke test on the packaged SmolLM2-135M-Instruct: the real tokenizer and template render a
harness row exactly as the deployed policy does, one LoRA step trains, and the saved student
answers a request in-process with its KV cache reused on the next one."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from sft_fixtures import episode_history, make_row, write_rows  # noqa: E402

from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, render  # noqa: E402
from captain_ros.learn.models import smollm2_base  # noqa: E402
from captain_ros.learn.sft import SftOptions, prepare, run_sft  # noqa: E402
from captain_ros.learn.tokenize import IGNORE  # noqa: E402
from captain_ros.policy.transformers_chat import TransformersChat  # noqa: E402

pytestmark = [pytest.mark.learn, pytest.mark.slow]


def test_smollm2_sft_step_and_student(tmp_path):
    torch.set_num_threads(2)
    try:
        base = smollm2_base()
    except Exception as exc:  # noqa: BLE001 - the wheel is part of the set-up; say what is missing
        pytest.fail(f"packaged SmolLM2 unavailable: {exc}")
    history = episode_history(2)
    write_rows(tmp_path / "data", [make_row(history)])
    opts = SftOptions(
        data=str(tmp_path / "data"),
        base="smollm2",
        out=str(tmp_path / "out"),
        max_steps=1,
        grad_accum=1,
        warmup=0.0,
        val_fraction=0.0,
        progress=False,
        save_steps=1000,
    )
    (seq,) = prepare(opts, tmp_path / "prep")["train"]
    assert len(seq.input_ids) < 2000
    metrics = run_sft(opts)
    assert metrics["steps"] == 1 and metrics["train_loss"] > 0
    chat = TransformersChat(tmp_path / "out", device="cpu", max_new_tokens=8, temperature=0)
    starts = [
        i
        for i in range(1, len(seq.labels))
        if seq.labels[i] != IGNORE and seq.labels[i - 1] == IGNORE
    ]
    for t, start in zip((1, 2), starts, strict=True):  # token-for-token parity, real tokenizer
        ids = chat.tokenizer(
            chat.render(render(history.upto(t)), [PYTHON_TOOL_SCHEMA]), add_special_tokens=False
        )["input_ids"]
        assert list(seq.input_ids[:start]) == list(ids)
    first = chat.generate(render(history.upto(1)), [PYTHON_TOOL_SCHEMA])
    second = chat.generate(render(history.upto(2)), [PYTHON_TOOL_SCHEMA])
    assert first.completion_ids and len(first.logprobs) == len(first.completion_ids)
    assert second.cache.reused >= len(first.prompt_ids)  # the whole first prompt came from cache
    assert base.joinpath("config.json").exists()
