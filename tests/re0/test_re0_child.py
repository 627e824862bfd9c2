"""A generation's distilled child stacked onto its parent as base + ONE adapter, twice.

On the tiny model from config: the parent is a ``captain learn sft``-style folder (a real peft LoRA
with random B matrices on the base), the generation-1 child a LoRA distilled on the parent's
merged model (as ``captain learn re0`` distils, ``--base PARENT``). :func:`ship_child` stacks it
into one adapter on the base whose logits are the parent's plus the child's; generation 2 starts
from that child and its own child stacks again (rank 4 + 2 + 2). The tiny base is not the packaged
SmolLM2, so the child is not exported (the report says why); the SmolLM2 export of a stacked
adapter and its llama.cpp agreement are tested in tests/learn/test_rl_student.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learn"))
from sft_fixtures import random_lora, save_tiny  # noqa: E402

from captain_ros.research.re0.child import ship_child, stackable  # noqa: E402

pytestmark = pytest.mark.learn
IDS = list(range(3, 40))


def _distilled(parent: Path, out: Path, seed: int) -> Path:
    """What ``distill`` leaves: a LoRA on the merged parent in ``out/adapter`` and its record."""
    random_lora(parent, 2, seed).save_pretrained(str(out / "adapter"))
    (out / "re0_distill.json").write_text(json.dumps({"corpus_sha256": f"corpus-{seed}"}))
    return out


def _logits(folder: Path, adapter: Path | None = None):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    if adapter is not None:
        model = PeftModel.from_pretrained(model, str(adapter))
    with torch.no_grad():
        return model(input_ids=torch.tensor([IDS])).logits[0]


def test_two_generations_stack_into_one_adapter_on_the_base(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    base = save_tiny(tmp_path / "base")
    parent = tmp_path / "sft"
    model = random_lora(base, 4, 0)
    model.save_pretrained(str(parent / "adapter"))
    model.merge_and_unload().save_pretrained(str(parent))
    (parent / "sft_config.json").write_text(
        json.dumps({"options": {"base": str(base)}, "base_folder": str(base), "profile": "student"})
    )
    (parent / "drafts.txt").write_text("note(**perceive(S))\n")
    assert stackable(parent) and not stackable(base)

    d1 = _distilled(parent, tmp_path / "g1" / "student", 1)
    g1 = ship_child(parent, d1, tmp_path / "g1" / "child", tmp_path / "g1" / "corpus")
    child = Path(g1["folder"])
    want = _logits(parent, d1 / "adapter")  # the merged parent + the distilled adapter
    assert (want - _logits(parent)).abs().max() > 1e-3  # the child's adapter changes the model
    assert torch.allclose(_logits(base, child / "adapter"), want, atol=1e-5)  # base + ONE adapter
    assert torch.allclose(_logits(child), want, atol=1e-5)  # and its merged model
    assert (
        g1["stacked_rank"] == 6 and not g1["exported"] and "transformers" in g1["why_not_exported"]
    )
    assert (child / "drafts.txt").read_text() == "note(**perceive(S))\n"
    assert ship_child(parent, d1, child, tmp_path / "g1" / "corpus")["reused"]

    # generation 2 starts from generation 1's child
    assert stackable(child)
    d2 = _distilled(child, tmp_path / "g2" / "student", 2)
    g2 = ship_child(child, d2, tmp_path / "g2" / "child", tmp_path / "g2" / "corpus")
    grandchild = Path(g2["folder"])
    want2 = _logits(child, d2 / "adapter")
    assert torch.allclose(_logits(base, grandchild / "adapter"), want2, atol=1e-5)
    cfg = json.loads((grandchild / "adapter" / "adapter_config.json").read_text())
    assert g2["stacked_rank"] == cfg["r"] == 8 and cfg["base_model_name_or_path"] == str(base)
    meta = json.loads((grandchild / "sft_config.json").read_text())
    assert meta["base_folder"] == str(base) and meta["profile"] == "student"

    # another distillation into the same folder replaces the child
    d1b = _distilled(parent, tmp_path / "g1b" / "student", 3)
    again = ship_child(parent, d1b, child, tmp_path / "g1" / "corpus")
    assert not again.get("reused") and again["corpus_sha256"] == "corpus-3"
