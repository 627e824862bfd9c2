"""A shipped student's LoRA adapter GGUF back as a trainable student folder
(:mod:`captain_ros.learn.gguf_adapter`, ``captain learn student-folder``).

llama.cpp's own converter is the reference: its ``LlamaModel.permute`` is what is undone, and its
``convert_lora_to_gguf.py`` turns the folder's adapter back into the GGUF it came from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.learn


def _llama_permute():  # noqa: ANN202 - llama.cpp's converter function
    from captain_ros.learn.export import converter_dir

    conv = converter_dir()
    sys.path[:0] = [str(conv / "gguf-py"), str(conv)]
    try:
        from conversion.llama import LlamaModel
    finally:
        del sys.path[:2]
    return LlamaModel.permute


@pytest.mark.parametrize(("rows", "heads"), [(576, 9), (192, 3), (8, 2)])
def test_unpermute_inverts_llama_cpps_rotary_permutation(rows: int, heads: int) -> None:
    import torch

    from captain_ros.learn.gguf_adapter import unpermute_rows

    w = np.random.default_rng(0).normal(size=(rows, 16)).astype(np.float32)
    permuted = _llama_permute()(torch.from_numpy(w), heads, heads).numpy()
    assert not np.array_equal(permuted, w)
    assert np.array_equal(unpermute_rows(permuted, heads), w)


def _tensors(path: Path) -> dict[str, np.ndarray]:
    from gguf import GGUFReader

    return {t.name: np.asarray(t.data).copy() for t in GGUFReader(str(path)).tensors}


@pytest.mark.slow
def test_the_shipped_student_round_trips_bit_for_bit_and_scores_as_llama_cpp(
    tmp_path: Path,
) -> None:
    import json

    from captain_ros.cli.learn_student_folder import main
    from captain_ros.learn.export import convert_adapter, recorded_prompts
    from captain_ros.learn.models import resolve_base
    from captain_ros.policy.students import get_student

    shipped = get_student()
    out = tmp_path / "student"
    assert main(["student", "--out", str(out)]) == 0
    meta = json.loads((out / "sft_config.json").read_text())
    assert meta["options"]["lora_r"] == 16 and meta["options"]["lora_alpha"] == 32
    assert meta["imported_from"]["student"] == "default" and meta["profile"] == "student"
    record = json.loads((shipped.folder / "student.json").read_text())
    assert meta["imported_from"]["training"] == record["training"]  # for a continuation's card
    # the folder's peft adapter, converted again by llama.cpp, is the shipped GGUF exactly
    again = convert_adapter(out / "adapter", resolve_base("smollm2"), tmp_path / "again.gguf")
    a, b = _tensors(shipped.adapter), _tensors(again)
    assert set(a) == set(b) and len(a) == 420
    assert all(np.array_equal(a[k], b[k]) for k in a)
    # and the merged model decodes a prompt as llama.cpp does with base + shipped adapter, up to
    # the first near-tie (the Q4_1 base with 8-bit activations against fp32 part there: measured
    # 5 of 16 tokens agreeing, log-prob difference 0.20 at most before that)
    from captain_ros.learn.export import ADAPTER_LOGPROB_TOL, check_export
    from captain_ros.policy.students import base_gguf

    checks = check_export(
        out, base_gguf(shipped), recorded_prompts(None, 1), 16, lora=shipped.adapter
    )
    c = checks[0]
    assert c.prompt_ids_equal and c.agreeing_tokens >= 3, c
    assert c.max_abs_logprob_diff < ADAPTER_LOGPROB_TOL, c
    # a second import into the same folder is refused, as is a file that is not an adapter
    assert main(["student", "--out", str(out)]) == 1
    (tmp_path / "bad.gguf").write_bytes(b"GGUF not really")
    assert main([str(tmp_path / "bad.gguf"), "--out", str(tmp_path / "x")]) == 1
    assert main([str(tmp_path / "missing.gguf"), "--out", str(tmp_path / "y")]) == 1
    assert main(["student:nobody", "--out", str(tmp_path / "z")]) == 1


def test_a_base_model_gguf_is_refused_as_an_adapter(tmp_path: Path) -> None:
    from captain_ros.learn.errors import LearnError
    from captain_ros.learn.gguf_adapter import read_lora_gguf
    from captain_ros.policy.transformers_chat import smollm2_folder

    folder, name = smollm2_folder()
    with pytest.raises(LearnError, match="not a llama LoRA adapter"):
        read_lora_gguf(folder / name)
