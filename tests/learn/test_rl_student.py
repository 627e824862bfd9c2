"""An RL version as one stacked adapter on the base model (:mod:`captain_ros.learn.rl.student`).

The SFT student and the RL adapter are real peft LoRA adapters with random B matrices (so each
changes the outputs): the SFT one on the base model, saved as ``captain learn sft`` saves a
student; the RL one on that student's merged model, saved as ``captain learn rl`` publishes a
version. The stacked adapter must give the same logits as the SFT student plus the RL adapter,
on the tiny model from config and, through llama.cpp, on the packaged SmolLM2 (slow).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sft_fixtures import random_lora, save_tiny  # noqa: E402

pytestmark = pytest.mark.learn


def _sft_and_rl(base: Path, root: Path, base_spec: str) -> tuple[Path, Path]:
    """An SFT student folder (adapter/, merged model, sft_config.json) and an RL version on it."""
    from transformers import AutoTokenizer

    sft, rl = root / "sft", root / "run" / "policy" / "v0003"
    tok = AutoTokenizer.from_pretrained(str(base))
    model = random_lora(base, 4, 0)
    model.save_pretrained(str(sft / "adapter"))
    model.merge_and_unload().save_pretrained(str(sft))
    tok.save_pretrained(str(sft))
    (sft / "sft_config.json").write_text(
        json.dumps({"options": {"base": base_spec}, "base_folder": str(base), "profile": "student"})
    )
    policy = random_lora(sft, 2, 1)
    policy.save_pretrained(str(rl))
    (rl / "version.json").write_text(json.dumps({"version": 3}))
    return sft, rl


def _logits(model, ids):
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0]


def test_the_stacked_adapter_is_the_sft_student_plus_the_rl_adapter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from captain_ros.learn.errors import LearnError
    from captain_ros.learn.rl.student import rl_student

    torch.set_num_threads(1)
    base = save_tiny(tmp_path / "base")
    sft, rl = _sft_and_rl(base, tmp_path, str(base))
    out = rl_student(sft, rl, tmp_path / "rl_student")
    ids = list(range(3, 40))

    def load(folder: Path):
        return AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)

    want = _logits(PeftModel.from_pretrained(load(sft), str(rl)), ids)
    assert (want - _logits(load(sft), ids)).abs().max() > 1e-3  # the RL adapter does something
    assert torch.allclose(_logits(load(out), ids), want, atol=1e-5)  # the merged model
    stacked = PeftModel.from_pretrained(load(base), str(out / "adapter"))
    assert torch.allclose(_logits(stacked, ids), want, atol=1e-5)  # base + ONE adapter
    cfg = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert cfg["r"] == 6 and cfg["base_model_name_or_path"] == str(base)
    meta = json.loads((out / "sft_config.json").read_text())
    assert meta["profile"] == "student" and meta["base_folder"] == str(base)
    assert meta["rl"]["version"] == 3 and meta["rl"]["stacked_rank"] == 6
    assert (out / "tokenizer.json").is_file() and (out / "adapter" / "tokenizer.json").is_file()

    other = tmp_path / "other_run" / "policy" / "v0001"  # trained on the base, not on the student
    random_lora(base, 2, 2).save_pretrained(str(other))
    with pytest.raises(LearnError, match="trained on .*base, not on the SFT student"):
        rl_student(sft, other, tmp_path / "bad")
    with pytest.raises(LearnError, match="a folder of its own"):
        rl_student(sft, rl, sft)
    with pytest.raises(LearnError, match="cannot be read as the RL adapter.s adapter config"):
        rl_student(sft, tmp_path / "base", tmp_path / "bad")

    from captain_ros.cli.learn import main

    capsys.readouterr()  # the loading bars so far
    assert main(["rl-student", str(sft), str(other), "--out", str(tmp_path / "bad")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("captain learn rl-student: ") and "v0001" in err[0]
    assert main(["rl-student", str(sft), str(rl), "--out", str(tmp_path / "cli")]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == {"out": str(tmp_path / "cli"), "version": 3, "rank": 6}


@pytest.mark.slow
def test_an_rl_student_of_smollm2_exports_and_llama_cpp_agrees(tmp_path: Path) -> None:
    """The real path: the packaged SmolLM2, an SFT adapter, an RL adapter; the stacked adapter
    converts with llama.cpp's converter and the Q4_1 base plus it agrees with transformers."""
    import torch

    from captain_ros.learn.export import ADAPTER_LOGPROB_TOL, export_adapter
    from captain_ros.learn.models import smollm2_base
    from captain_ros.learn.rl.student import rl_student

    torch.set_num_threads(1)
    sft, rl = _sft_and_rl(smollm2_base(), tmp_path, "smollm2")
    out = rl_student(sft, rl, tmp_path / "rl_student")
    rec = export_adapter(out, n_prompts=1, max_new_tokens=16)
    assert rec["prompts"][0]["prompt_ids_equal"] and rec["agreeing_tokens"] >= 1
    assert rec["max_abs_logprob_diff"] < ADAPTER_LOGPROB_TOL
    assert rec["base"] == "smollm2" and rec["profile"] == "student"
