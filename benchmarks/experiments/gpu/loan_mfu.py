"""The model-FLOPs utilisation of a ``captain learn sft`` run (``loan_six.py train``): tokens/s
from its ``metrics.json``, 6 N FLOPs per trained token (N: the base's parameters) and, beside it,
causal attention from ``sft_config.json``'s squared sequence lengths, over the chip's dense bf16
peak (from its name) and over a bf16 matmul measured in the same process."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

# Dense bf16 tensor-core peaks [TFLOP/s] (vendor data sheets, without sparsity), by device name.
PEAK_BF16_TFLOPS = (
    ("H200", 989.4),
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.4),
    ("A100", 312.0),
    ("L40S", 362.1),
)


def peak_tflops(name: str) -> float | None:
    return next((p for key, p in PEAK_BF16_TFLOPS if key in name), None)


def measured_matmul_tflops(device: str, n: int = 8192, reps: int = 10) -> float:
    """A square bf16 matmul's rate on ``device`` (fp32 on a CPU, smaller)."""
    import torch

    cuda = device.startswith("cuda")
    n = n if cuda else 512
    dt = torch.bfloat16 if cuda else torch.float32
    a, b = (torch.randn(n, n, device=device, dtype=dt) for _ in range(2))
    for _ in range(3):
        a @ b
    if cuda:
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    if cuda:
        torch.cuda.synchronize()
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e12


def train_figures(student: Path, device: str) -> dict[str, Any]:
    """Tokens/s and MFU of the run in ``student`` (its metrics.json and sft_config.json)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    metrics = json.loads((student / "metrics.json").read_text())
    meta = json.loads((student / "sft_config.json").read_text())
    base = meta["base_folder"]
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(base))
    n_params = sum(p.numel() for p in model.parameters())
    cfg = model.config
    rate = float(metrics["tokens_per_s"])
    epochs = float(meta["options"]["epochs"])
    tokens = float(meta["train"]["tokens"]) * epochs
    # causal attention: QK^T and PV, 2 L^2 d FLOPs per layer forward (half of 4 L^2 d), x3 with
    # the backward pass, over the sequences' squared lengths
    attn = 6.0 * meta.get("train_length_sq", 0) * epochs * cfg.hidden_size * cfg.num_hidden_layers
    flops_6n = 6.0 * n_params * rate
    flops_all = flops_6n + (attn / tokens * rate if tokens else 0.0)
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
    peak = peak_tflops(name)
    matmul = measured_matmul_tflops(device)
    fig = {
        "device": name,
        "params": n_params,
        "tokens_per_s": rate,
        "train_s": metrics["train_s"],
        "steps": metrics["steps"],
        "tokens_seen": metrics["tokens_seen"],
        "bf16": metrics["bf16"],
        "eval_loss": metrics.get("eval_loss"),
        "train_loss": metrics["train_loss"],
        "packing": meta.get("packing"),
        "model_tflops_6n": flops_6n / 1e12,
        "model_tflops_with_attention": flops_all / 1e12,
        "peak_bf16_tflops": peak,
        "measured_matmul_tflops": matmul,
        "mfu_6n": flops_6n / (peak * 1e12) if peak else None,
        "mfu_with_attention": flops_all / (peak * 1e12) if peak else None,
        "mfu_6n_of_measured_matmul": flops_6n / (matmul * 1e12),
        "speedup_over_h200_batch1": rate / 8826.0,  # benchmarks/results/gpu.md, 2026-12-04
    }
    return fig
