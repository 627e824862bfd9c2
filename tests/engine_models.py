"""Tiny real models for the engine tests, built offline once per test process.

A Llama-architecture model from a small ``LlamaConfig`` (random weights, seeded) with SmolLM2's own
tokenizer (read from the packaged GGUF by transformers), saved as a transformers folder and
converted to GGUF by llama.cpp's ``convert_hf_to_gguf.py`` (:func:`captain_ros.learn.export.convert`).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path


@functools.cache
def tiny_llama(outtype: str = "f32") -> tuple[Path, Path]:
    """(transformers folder, GGUF file) of a 2-layer Llama with SmolLM2's 49k-token vocabulary."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from captain_ros.learn.export import convert
    from captain_ros.policy.transformers_chat import smollm2_folder

    torch.set_num_threads(1)
    folder, gguf = smollm2_folder()
    tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf)
    out = Path(tempfile.mkdtemp(prefix="captain_tiny_llama_"))
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        initializer_range=0.2,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out, convert(out, out / f"tiny.{outtype}.gguf", outtype)
