"""A shipped student's LoRA adapter GGUF back as a trainable student folder.

The package ships a student as llama.cpp runs it: the packaged SmolLM2 GGUF plus one LoRA adapter
GGUF (f16, written by llama.cpp's ``convert_lora_to_gguf.py``; the peft adapter it came from is
not shipped). RL (``captain learn rl --policy-folder``), RE-0 (``captain learn re0 --student``)
and further SFT (``--init-adapter``) train through transformers and take a student folder as
``captain learn sft`` leaves one: ``adapter/`` (peft), the merged model and ``sft_config.json``.
:func:`student_folder_from_gguf` writes that folder from the GGUF, so every later stage starts
from exactly the weights that ship.

It inverts the converter for the llama architecture (SmolLM2): GGUF tensor names back to peft's
(``blk.N.attn_q.weight.lora_a`` -> ``...layers.N.self_attn.q_proj.lora_A.weight``), and the rows
of the q and k projections' ``lora_b`` back from llama.cpp's rotary layout (the converter permutes
them as it permutes the base's q/k weights). The f16 values become fp32 exactly, so converting the
folder's adapter again gives the shipped GGUF's tensors bit for bit (tested).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.learn.errors import LearnError

MODULES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
"""llama.cpp's block tensor names -> the HF llama modules LoRA targets."""
_TENSOR = re.compile(r"blk\.(\d+)\.(\w+)\.weight\.lora_([ab])")


def unpermute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """The inverse of llama.cpp's ``LlamaModel.permute`` on the rows of ``w`` (heads of
    ``n_head``; for k, the key-value heads): each head's rows back from the interleaved rotary
    halves to HF's two contiguous halves."""
    rows = w.shape[0]
    if rows % (2 * n_head):
        raise LearnError(f"cannot undo the rotary layout: {rows} rows for {n_head} heads")
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _field(reader: Any, key: str) -> Any:
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def read_lora_gguf(path: str | Path) -> tuple[float, int, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """(alpha, rank, {peft module path: (A, B)}) of a llama LoRA adapter GGUF, A as (r, in) and B
    as (out, r) in llama.cpp's layout (q/k rows still permuted). :class:`LearnError` for a file
    that is not one."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError) as exc:
        raise LearnError(f"{path}: not a readable GGUF file ({exc})") from None
    kind = (_field(reader, "general.type"), _field(reader, "adapter.type"))
    arch = _field(reader, "general.architecture")
    if kind != ("adapter", "lora") or arch != "llama":
        raise LearnError(
            f"{path}: not a llama LoRA adapter GGUF (type {kind[0]!r}/{kind[1]!r}, "
            f"architecture {arch!r})"
        )
    alpha = _field(reader, "adapter.lora.alpha")
    parts: dict[str, dict[str, np.ndarray]] = {}
    for t in reader.tensors:
        m = _TENSOR.fullmatch(t.name)
        if m is None or m.group(2) not in MODULES:
            raise LearnError(f"{path}: unexpected tensor {t.name!r} for a llama LoRA adapter")
        key = f"model.layers.{int(m.group(1))}.{MODULES[m.group(2)]}"
        parts.setdefault(key, {})[m.group(3)] = np.asarray(t.data, dtype=np.float32)
    if alpha is None or not parts or any(set(p) != {"a", "b"} for p in parts.values()):
        raise LearnError(f"{path}: incomplete LoRA adapter (alpha {alpha}, {len(parts)} modules)")
    ranks = {p["a"].shape[0] for p in parts.values()} | {p["b"].shape[1] for p in parts.values()}
    if len(ranks) != 1:
        raise LearnError(f"{path}: the modules have different ranks {sorted(ranks)}")
    return float(alpha), ranks.pop(), {k: (p["a"], p["b"]) for k, p in parts.items()}


def peft_state_dict(
    modules: dict[str, tuple[np.ndarray, np.ndarray]], n_head: int, n_kv_head: int
) -> dict[str, np.ndarray]:
    """peft's adapter state dict (``base_model.model.<module>.lora_{A,B}.weight``) with the q/k
    ``lora_b`` rows back in HF's layout."""
    out: dict[str, np.ndarray] = {}
    for key, (a, b) in sorted(modules.items()):
        if key.endswith("q_proj"):
            b = unpermute_rows(b, n_head)
        elif key.endswith("k_proj"):
            b = unpermute_rows(b, n_kv_head)
        out[f"base_model.model.{key}.lora_A.weight"] = a
        out[f"base_model.model.{key}.lora_B.weight"] = b
    return out


def student_folder_from_gguf(
    adapter_gguf: str | Path,
    out: str | Path,
    base: str = "smollm2",
    profile: str = "student",
    source: dict[str, Any] | None = None,
) -> Path:
    """Write the student folder ``out`` (``adapter/``, the merged model, the tokenizer with the
    chat template the students train with, ``sft_config.json``) for the LoRA adapter GGUF
    ``adapter_gguf`` on the base ``base``; ``source`` is recorded as ``sft_config.json``'s
    ``imported_from`` beside the GGUF's path and sha256."""
    import torch
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from captain_ros.learn.models import resolve_base
    from captain_ros.policy.chat_render import effective_template
    from captain_ros.policy.students import file_sha256

    gguf, out = Path(adapter_gguf), Path(out)
    alpha, rank, modules = read_lora_gguf(gguf)
    base_folder = resolve_base(base)
    model = AutoModelForCausalLM.from_pretrained(str(base_folder), dtype=torch.float32)
    cfg = model.config
    targets = sorted({k.rsplit(".", 1)[-1] for k in modules})
    lora_alpha: Any = int(alpha) if alpha.is_integer() else alpha  # peft types it as int
    lora = LoraConfig(
        r=rank,
        lora_alpha=lora_alpha,
        lora_dropout=0.0,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(model, lora)
    state = peft_state_dict(modules, cfg.num_attention_heads, cfg.num_key_value_heads)
    result: Any = set_peft_model_state_dict(
        peft_model, {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}
    )
    missing = [k for k in result.missing_keys if "lora_" in k]
    if missing or result.unexpected_keys:
        raise LearnError(
            f"{gguf}: the adapter does not fit {base} ({len(missing)} LoRA weights missing, "
            f"{len(result.unexpected_keys)} unexpected)"
        )
    tokenizer = AutoTokenizer.from_pretrained(str(base_folder))
    tokenizer.chat_template = effective_template(tokenizer)
    out.mkdir(parents=True, exist_ok=True)
    peft_model.save_pretrained(str(out / "adapter"))
    tokenizer.save_pretrained(str(out / "adapter"))
    merged: Any = peft_model.merge_and_unload()
    merged.config.architectures = [type(merged).__name__]
    merged.config.use_cache = True
    merged.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    meta = {
        "options": {
            "base": base,
            "method": "lora",
            "lora_r": rank,
            "lora_alpha": alpha,
            "lora_dropout": 0.0,
        },
        "base_folder": str(base_folder),
        "profile": profile,
        "imported_from": {
            "gguf": str(gguf),
            "sha256": file_sha256(gguf),
            **(source or {}),
        },
    }
    (out / "sft_config.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out
