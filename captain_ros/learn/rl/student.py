"""An RL policy version as a student folder that packages, evaluates and ships like an SFT one.

``captain learn rl`` trains a fresh LoRA adapter over the *merged* SFT student (its KL reference
is that student with the adapter off), so a version's weights are ``W + s1 B1 A1 + s2 B2 A2``: the
base model, the SFT adapter and the RL adapter. Both deltas are low-rank and add, so peft's
``add_weighted_adapter(..., combination_type="cat")`` stacks them into ONE adapter of rank
``r1 + r2`` on the base model, exactly (no SVD truncation). :func:`rl_student` writes that adapter
and the merged model into a folder laid out as ``captain learn sft`` leaves one (``adapter/``,
the merged transformers model, ``sft_config.json``), so ``captain learn export --adapter``,
``benchmarks/experiments/exp_student.py`` (export, eval, report) and ``scripts/ship_student.py``
take it unchanged: a shipped RL student is the packaged SmolLM2 GGUF plus one adapter GGUF (about
twice the SFT adapter's size), as the SFT student is.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from captain_ros.learn.errors import LearnError

__all__ = ["rl_student", "stack_student"]

SFT_CONFIG = "sft_config.json"
_COPIED = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
)


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise LearnError(f"{path} cannot be read as {what}: {exc}") from None
    if not isinstance(data, dict):
        raise LearnError(f"{path} is not {what}")
    return data


def _check_adapter(folder: Path, what: str) -> dict[str, Any]:
    """The adapter's peft config; only plain LoRA (no DoRA, no per-module ranks) stacks exactly."""
    cfg = _read_json(folder / "adapter_config.json", f"the {what}'s adapter config")
    if not (folder / "adapter_model.safetensors").is_file():
        raise LearnError(f"{folder}: the {what} has no adapter_model.safetensors")
    if cfg.get("peft_type") != "LORA" or cfg.get("use_dora") or cfg.get("rank_pattern"):
        raise LearnError(
            f"{folder}: the {what} is not a plain LoRA adapter (peft_type "
            f"{cfg.get('peft_type')!r}, DoRA {bool(cfg.get('use_dora'))}, per-module ranks "
            f"{bool(cfg.get('rank_pattern'))}); it cannot be stacked exactly"
        )
    return cfg


def rl_student(sft: str | Path, adapter: str | Path, out: str | Path) -> Path:
    """Write ``out``: the SFT student ``sft`` (a ``captain learn sft`` folder with ``adapter/``)
    with the RL adapter ``adapter`` (a published version ``RUN/policy/vNNNN`` or any peft LoRA
    folder trained on ``sft``'s merged model) as one stacked adapter and its merged model.

    Raises :class:`LearnError` when a folder is not what it should be, or when the RL adapter was
    trained on another model than ``sft``."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    sft, adapter, out = Path(sft), Path(adapter), Path(out)
    meta = _read_json(sft / SFT_CONFIG, "a `captain learn sft` record")
    base = Path(str(meta.get("base_folder", "")))
    if not (base / "config.json").is_file():
        raise LearnError(f"{sft}: the base model folder {base} of its sft_config.json is missing")
    first = _check_adapter(sft / "adapter", "SFT student")
    second = _check_adapter(adapter, "RL adapter")
    trained_on = Path(str(second.get("base_model_name_or_path", "")))
    if trained_on.resolve() != sft.resolve():
        raise LearnError(
            f"{adapter}: this RL adapter was trained on {trained_on}, not on the SFT student {sft}"
        )
    if out.resolve() in (sft.resolve(), adapter.resolve()):
        raise LearnError(f"{out}: write the RL student into a folder of its own")
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    peft_model = PeftModel.from_pretrained(model, str(sft / "adapter"), adapter_name="sft")
    peft_model.load_adapter(str(adapter), adapter_name="rl")
    peft_model.add_weighted_adapter(["sft", "rl"], [1.0, 1.0], "policy", combination_type="cat")
    peft_model.set_adapter("policy")
    for name in ("sft", "rl"):
        peft_model.delete_adapter(name)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        peft_model.save_pretrained(tmp)  # a non-default adapter goes to TMP/<name>/
        if (out / "adapter").exists():
            shutil.rmtree(out / "adapter")
        shutil.move(str(Path(tmp) / "policy"), out / "adapter")
    _fix_base(out / "adapter" / "adapter_config.json", base)
    merged = peft_model.merge_and_unload()
    merged.config.architectures = [type(merged).__name__]
    merged.config.use_cache = True
    merged.save_pretrained(str(out))
    for name in _COPIED:
        for folder in (sft, sft / "adapter"):
            if (folder / name).is_file():
                shutil.copy(folder / name, out / name)
                if name != "chat_template.jinja":
                    shutil.copy(folder / name, out / "adapter" / name)
                break
    if (sft / "generation_config.json").is_file():
        shutil.copy(sft / "generation_config.json", out / "generation_config.json")
    rank = int(first.get("r", 0)) + int(second.get("r", 0))
    version = (
        _read_json(adapter / "version.json", "") if (adapter / "version.json").is_file() else {}
    )
    meta = {
        **meta,
        "rl": {
            "sft_student": str(sft),
            "adapter": str(adapter),
            "version": version.get("version"),
            "stacked_rank": rank,
        },
    }
    (out / SFT_CONFIG).write_text(json.dumps(meta, indent=2) + "\n")
    return out


def _fix_base(config_path: Path, base: Path) -> None:
    """The stacked adapter applies to the base model, whatever the RL adapter was trained on."""
    cfg = json.loads(config_path.read_text())
    cfg["base_model_name_or_path"] = str(base)
    config_path.write_text(json.dumps(cfg, indent=2) + "\n")


def stack_student(parent: str | Path, adapter: str | Path, out: str | Path) -> Path:
    """Any LoRA adapter trained on the merged student ``parent`` stacked onto it, exactly as
    :func:`rl_student` stacks an RL version: an RE-OPD child distilled with the merged parent as
    its base (``captain learn re0``, :mod:`captain_ros.research.re0.child`) is the same situation
    (base + parent adapter + child adapter). The record's ``rl`` entry then names the child's
    adapter and the stacked rank."""
    return rl_student(parent, adapter, out)
