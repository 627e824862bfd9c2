"""A student as the packaged SmolLM2 plus a LoRA adapter GGUF: export, check, and ``--policy student``.

The adapter is a real peft LoRA on the real packaged base (its B matrices drawn at random, so it
changes the model's outputs), saved as ``captain learn sft`` saves a student (adapter folder,
merged model, ``sft_config.json``). ``export_adapter`` converts it with llama.cpp's own
``convert_lora_to_gguf.py`` and checks llama.cpp (Q4_1 base + adapter) against transformers (the
merged student); a shipped-student folder made from it runs as ``--policy student:NAME``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.learn, pytest.mark.slow]


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from captain_ros.learn.models import smollm2_base

    torch.set_num_threads(1)
    base = smollm2_base()
    out = tmp_path_factory.mktemp("student")
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    torch.manual_seed(0)  # peft draws the A matrices
    model = get_peft_model(
        model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.005)
    tok = AutoTokenizer.from_pretrained(str(base))
    model.save_pretrained(str(out / "adapter"))
    merged = model.merge_and_unload()
    merged.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    (out / "sft_config.json").write_text(
        json.dumps({"options": {"base": "smollm2"}, "base_folder": str(base), "profile": "student"})
    )
    return out


def test_the_adapter_exports_and_llama_cpp_agrees_with_the_merged_student(student: Path) -> None:
    from captain_ros.learn.export import ADAPTER_GGUF, ADAPTER_LOGPROB_TOL, export_adapter

    rec = export_adapter(student, n_prompts=1, max_new_tokens=24)
    assert rec["gguf"] == ADAPTER_GGUF and 0 < rec["reply_tokens"] <= 24
    # the adapter is applied: greedy tokens agree with the merged student at first (a random
    # adapter makes near-ties, where Q4_1 x 8-bit activations may part from fp32 later)
    assert rec["agreeing_tokens"] >= 1 and rec["prompts"][0]["prompt_ids_equal"]
    assert rec["max_abs_logprob_diff"] < ADAPTER_LOGPROB_TOL
    # and llama.cpp does apply it: the base alone gives the first reply token another log-prob
    from captain_ros.learn.export import FALLBACK_PROMPT
    from captain_ros.policy.engines.base import EngineSettings
    from captain_ros.policy.engines.llamacpp import LlamaCppChat
    from captain_ros.policy.transformers_chat import smollm2_folder

    folder, gguf = smollm2_folder()
    settings = EngineSettings(max_new_tokens=1, temperature=0.0, threads=1)
    firsts = []
    for lora in (None, student / ADAPTER_GGUF):
        eng = LlamaCppChat(folder / gguf, settings, lora_path=lora)
        try:
            firsts.append(eng.generate(list(FALLBACK_PROMPT)).logprobs[0])
        finally:
            eng.close()
    assert abs(firsts[0] - firsts[1]) > 1e-3, firsts
    assert 0 < rec["bytes"] < 8_000_000  # r = 4: about 2.4 MB of f16
    assert json.loads((student / "export.json").read_text())["adapter"]["base"] == "smollm2"


def test_a_shipped_student_runs_as_policy_student(
    student: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from captain_ros.core.errors import InvalidArgumentError
    from captain_ros.learn.export import ADAPTER_GGUF, export_adapter
    from captain_ros.policy import students
    from captain_ros.policy.config import PolicyConfig
    from captain_ros.policy.engines import model_source
    from captain_ros.policy.engines.base import ModelFileError
    from captain_ros.policy.factory import check_spec, make_policy

    if not (student / ADAPTER_GGUF).exists():
        export_adapter(student, n_prompts=1, max_new_tokens=8)
    rec = json.loads((student / "export.json").read_text())["adapter"]
    shipped = tmp_path / "students" / "tiny"
    shipped.mkdir(parents=True)
    shutil.copy(student / ADAPTER_GGUF, shipped / ADAPTER_GGUF)
    reply = {
        "role": "assistant",
        "content": "Observe the scene.",
        "tool_calls": [
            {"function": {"name": "python", "arguments": '{"code": "note(**perceive(S))"}'}}
        ],
    }
    rows = [{"task": "pick_place", "messages": [{"role": "user", "content": "go"}, reply]}] * 3
    students.write_drafts(rows, shipped / students.DRAFTS, per_task=2)
    assert (shipped / students.DRAFTS).read_text().count("<tool_call>") == 2  # 2 rows of the task
    (shipped / "student.json").write_text(
        json.dumps(
            {
                "base": "smollm2",
                "base_sha256": rec["base_sha256"],
                "adapter": ADAPTER_GGUF,
                "drafts": students.DRAFTS,
                "profile": "student",
                "tasks": ["pick_place"],
            }
        )
    )
    monkeypatch.setattr(students, "STUDENTS_DIR", tmp_path / "students")

    assert students.names() == ["tiny"]
    check_spec("student:tiny")
    with pytest.raises(InvalidArgumentError, match="shipped: tiny"):
        check_spec("student:nope")
    cfg = students.expand_policy(PolicyConfig("student:tiny", engine="auto"))
    # no `decoding` in the record: decoded as exp_student.py measured every shipped student
    assert cfg == PolicyConfig(
        "transformers",
        engine="llamacpp",
        model_folder=str(shipped),
        temperature=0.0,
        max_new_tokens=160,
    )
    asked = students.expand_policy(PolicyConfig("student:tiny", temperature=1.0, max_new_tokens=9))
    assert (asked.temperature, asked.max_new_tokens) == (1.0, 9)
    with pytest.raises(InvalidArgumentError, match="llamacpp"):
        students.expand_policy(PolicyConfig("student:tiny", engine="transformers"))
    src = model_source(shipped)
    assert src.lora == shipped / ADAPTER_GGUF and src.gguf is not None and src.folder is None
    assert src.drafts == shipped / students.DRAFTS

    from captain_ros.harness.episode.profiles import resolve_profile

    assert resolve_profile(None, shipped) == "student"
    policy = make_policy(PolicyConfig("student:tiny", max_new_tokens=8, threads=1))
    try:
        assert policy.describe()["adapter"].endswith(ADAPTER_GGUF)
        # the episode records how it decoded: greedy, as the student's figures were measured
        assert policy.describe()["decoding"] == {
            "temperature": 0.0,
            "top_p": 1.0,
            "max_new_tokens": 8,
        }
        drafter = policy.engine.drafter  # the corpus is searched from the first request
        drafter.start([])
        code = policy.engine.tokenize('{"code": "note(**perceive(S))"}')
        assert drafter.draft(code[:4], limit=3) == code[4:7]
    finally:
        policy.close()
    (shipped / students.DRAFTS).unlink()
    with pytest.raises(ModelFileError, match="draft corpus .* is missing"):
        model_source(shipped)
    rec_now = json.loads((shipped / "student.json").read_text())
    (shipped / "student.json").write_text(
        json.dumps({k: v for k, v in rec_now.items() if k != "drafts"})
    )

    # a student trained on another base is refused with one line, not run with the wrong weights
    bad = json.loads((shipped / "student.json").read_text()) | {"base_sha256": "0" * 64}
    (shipped / "student.json").write_text(json.dumps(bad))
    with pytest.raises(ModelFileError, match="trained on another smollm2"):
        model_source(shipped)
