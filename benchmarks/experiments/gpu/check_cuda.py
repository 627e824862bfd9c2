"""The CUDA paths of the learning stack, checked on a lent GPU machine in one short run.

Checks (each one's figures, or its error, go to ``--out/check_cuda.json``; exit 1 if any failed):

1. ``env``: torch, CUDA device, bf16, the library versions actually imported;
2. ``sft_lora`` / ``sft_full``: ``captain learn sft --device DEV --bf16 on`` on a tiny Qwen2 base
   built from config (the test fixtures' tokenizer and rows), LoRA and full fine-tuning;
3. ``sft_reopd``: the same command on RE-OPD rows (retention weight 1, the teacher segment at
   w = [LCB]+, context turns 0), the path ``captain learn re0`` distils through;
4. ``student_generate``: the trained student in ``TransformersChat`` on DEV (bf16 on CUDA), two
   requests of one episode, the second reusing the first's KV cache;
5. ``rl_update``: one streaming policy update (``PolicyUpdater``) of a LoRA model on DEV;
6. ``limits``: the physical limits measured in the same run (a large bf16 matrix product, a
   device-to-device copy) for the figures below;
7. ``smollm2_shape``: a random-weight model of SmolLM2-135M-Instruct's architecture (no weights
   travel: throughput does not depend on them): LoRA r = 16 (all linear layers) forward +
   backward + AdamW under bf16 autocast at 2,048 and 6,400 tokens (the ``helpers`` episode
   length), and ``generate`` with the KV cache (128 new tokens after a 1,536-token prompt) at
   batch 1 and 16; tokens/s and the matmul FLOP rate against ``limits``;
Beside the checks, ``vllm`` reports whether vLLM is importable there (a fact, not a check: it is
not on the device image, and serving is never run here).

``--device cpu --quick`` runs every check at toy sizes (the test suite does, so the script cannot
rot between GPU loans). Run on the device: ``python3 benchmarks/experiments/gpu/check_cuda.py --out $OUT``
with the repository root on ``PYTHONPATH`` (``benchmarks/experiments/gpu/device_check.sh`` does the set-up).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "learn"))
sys.path.insert(0, str(ROOT / "tests"))

# SmolLM2-135M-Instruct's config (the packaged GGUF's architecture).
SMOLLM2 = dict(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
    rope_theta=100000.0,
)
TOY = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=1024,
    tie_word_embeddings=True,
)


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def check_env(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
    }
    for name in ("transformers", "trl", "peft", "accelerate", "datasets", "tokenizers"):
        out[name] = getattr(importlib.import_module(name), "__version__", "?")
    if ns.device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device")
        p = torch.cuda.get_device_properties(0)
        out.update(
            device_name=p.name,
            memory_gib=round(p.total_memory / 2**30, 1),
            multiprocessors=p.multi_processor_count,
            cuda=torch.version.cuda,
            bf16=torch.cuda.is_bf16_supported(),
        )
    return out


def _sft(ns: argparse.Namespace, data: Path, base: Path, out: Path, *extra: str) -> dict[str, Any]:
    from captain_ros.cli.main import main as captain

    bf16 = "on" if ns.device.startswith("cuda") else "off"
    code = captain(
        [
            "learn",
            "sft",
            "--data",
            str(data),
            "--base",
            str(base),
            "--out",
            str(out),
            "--device",
            ns.device,
            "--bf16",
            bf16,
            "--max-steps",
            "3",
            "--grad-accum",
            "1",
            "--val-fraction",
            "0",
            "--eval-steps",
            "1000",
            "--save-steps",
            "1000",
            "--no-progress",
            *extra,
        ]
    )
    if code != 0:
        raise RuntimeError(f"captain learn sft exited {code}")
    m = json.loads((out / "metrics.json").read_text())
    if m.get("device") != ns.device or not math.isfinite(float(m["train_loss"])):
        raise RuntimeError(f"unexpected metrics: device {m.get('device')}, loss {m['train_loss']}")
    return {k: m.get(k) for k in ("device", "bf16", "steps", "train_loss", "tokens_per_s")}


def _tiny_data(work: Path) -> tuple[Path, Path]:
    from sft_fixtures import episode_history, make_row, save_tiny, write_rows

    base = work / "base"
    if not (base / "config.json").exists():
        save_tiny(base)
        write_rows(work / "data", [make_row(episode_history(4), seed=s) for s in range(4)])
    return base, work / "data"


def check_sft_lora(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    base, data = _tiny_data(work)
    return _sft(ns, data, base, work / "student_lora")


def check_sft_full(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    base, data = _tiny_data(work)
    return _sft(ns, data, base, work / "student_full", "--method", "full")


def check_sft_reopd(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    from sft_fixtures import episode_history, make_row, write_rows

    base, _ = _tiny_data(work)
    lcb = 0.193  # an admitted event's LCB (RESULTS: seed 300)
    rows = [make_row(episode_history(4), weights=[1.0, lcb, lcb, 0.0], seed=s) for s in range(4)]
    data = write_rows(work / "data_reopd", rows)
    return _sft(ns, data, base, work / "student_reopd", "--lr", "1e-3")


def check_student_generate(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    from sft_fixtures import episode_history

    from captain_ros.harness.episode.context import render
    from captain_ros.policy.transformers_chat import TransformersChat

    folder = work / "student_lora"
    if not (folder / "config.json").exists():
        check_sft_lora(ns, work)
    chat = TransformersChat(folder, device=ns.device, max_new_tokens=16, temperature=0.0)
    messages = render(episode_history(2))
    first = chat.generate(messages[:-2])
    second = chat.generate(
        [
            *messages[:-2],
            {"role": "assistant", "content": first.text},
            {"role": "user", "content": "[receipt] ok"},
        ]
    )
    param = next(chat.model.parameters())
    if not str(param.device).startswith(ns.device):
        raise RuntimeError(f"the model is on {param.device}, not {ns.device}")
    if second.cache.reused == 0:
        raise RuntimeError("the second request did not reuse the first one's KV cache")
    return {
        "dtype": str(param.dtype),
        "device": str(param.device),
        "first_new_tokens": len(first.completion_ids),
        "second_cache_reused": second.cache.reused,
        "second_prefilled": second.cache.prefilled,
    }


def check_rl_update(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    import numpy as np
    import peft
    import torch
    import transformers

    from captain_ros.learn.rl import PolicyUpdater, RLSample, UpdateConfig, token_logprobs

    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(
        vocab_size=96,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    model = peft.get_peft_model(
        transformers.Qwen2ForCausalLM(cfg),
        peft.LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"),
    )
    model.to(ns.device)
    rng = np.random.default_rng(0)
    ids, req = [1, 2, 3], [0, 0, 0]
    for t in (1, 2, 3):
        ids += rng.integers(4, 96, size=5).tolist() + [3, 4]
        req += [t] * 5 + [0, 0]
    ids_t = torch.tensor(ids, device=ns.device)
    pos = torch.nonzero(torch.tensor(req, device=ns.device) > 0).squeeze(-1)
    with torch.no_grad():
        lp = token_logprobs(model, ids_t, pos)
    old = np.zeros(len(ids))
    old[pos.cpu().numpy()] = lp.float().cpu().numpy()
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    updater = PolicyUpdater(model, UpdateConfig(lr=1e-2, accumulation_rounds=1, warmup_steps=0))
    stats = updater.accumulate_round(
        [RLSample("ep0", np.array(ids), np.array(req), old, 0)], {"ep0": {1: 1.0, 2: -0.5, 3: 0.25}}
    )
    moved = sum(
        int(not torch.equal(before[n], p)) for n, p in model.named_parameters() if p.requires_grad
    )
    if moved == 0 or updater.version != 1 or not stats.stepped:
        raise RuntimeError(f"no optimizer step (moved {moved}, version {updater.version})")
    return {
        "policy_version": updater.version,
        "tensors_moved": moved,
        "loss": float(stats.loss),
        "tokens": int(stats.tokens),
    }


def check_limits(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    import torch

    n = 8192 if not ns.quick else 256
    dt = torch.bfloat16 if ns.device.startswith("cuda") else torch.float32
    a = torch.randn(n, n, device=ns.device, dtype=dt)
    b = torch.randn(n, n, device=ns.device, dtype=dt)
    for _ in range(3):
        a @ b
    _sync(ns.device)
    t, reps = time.perf_counter(), 10
    for _ in range(reps):
        a @ b
    _sync(ns.device)
    matmul = 2 * n**3 * reps / (time.perf_counter() - t) / 1e12
    x = torch.empty(2**30 if not ns.quick else 2**20, dtype=torch.uint8, device=ns.device)
    y = torch.empty_like(x)
    y.copy_(x)
    _sync(ns.device)
    t = time.perf_counter()
    for _ in range(reps):
        y.copy_(x)
    _sync(ns.device)
    copy_tb = 2 * x.numel() * reps / (time.perf_counter() - t) / 1e12  # bytes read + written
    return {
        "matmul_tflops": round(matmul, 2),
        "matmul_n": n,
        "matmul_dtype": str(dt),
        "copy_tb_per_s": round(copy_tb, 3),
    }


def _shape_model(ns: argparse.Namespace) -> Any:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**(TOY if ns.quick else SMOLLM2))
    with torch.device(ns.device):
        return transformers.LlamaForCausalLM(cfg)


def check_smollm2_shape(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    import torch

    model = _shape_model(ns)
    n_params = sum(p.numel() for p in model.parameters())
    bf16 = ns.device.startswith("cuda")
    out: dict[str, Any] = {"params": n_params, "lora": "r=16 all-linear", "bf16_autocast": bf16}
    out.update(_train_rates(ns, model, n_params, bf16))
    model = _shape_model(ns).to(torch.bfloat16 if bf16 else torch.float32).eval()
    prompt, new = (1536, 128) if not ns.quick else (64, 8)
    for batch in (1, 16):
        ids = torch.randint(0, model.config.vocab_size, (batch, prompt), device=ns.device)

        def gen(ids: Any = ids) -> None:
            with torch.inference_mode():
                model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=new,
                    min_new_tokens=new,
                    do_sample=False,
                    pad_token_id=0,
                )

        rate = _rate(gen, batch * new, ns, reps=3)
        out[f"generate_batch{batch}_new_tokens_per_s"] = round(rate, 1)
    # batch-1 decoding reads every weight once per token: the memory-bandwidth bound
    out["generate_weight_bytes"] = n_params * (2 if bf16 else 4)
    return out


def _train_rates(ns: argparse.Namespace, model: Any, n_params: int, bf16: bool) -> dict[str, Any]:
    """LoRA forward + backward + AdamW tokens/s at the two sequence lengths."""
    import peft
    import torch

    lora = peft.get_peft_model(
        model, peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear")
    )
    opt = torch.optim.AdamW([p for p in lora.parameters() if p.requires_grad], lr=1e-4)
    out: dict[str, Any] = {}
    lengths = (2048, 6400) if not ns.quick else (64, 128)
    for length in lengths:
        # the long sequence is past 4,096 tokens: `captain learn sft --gradient-checkpointing
        # auto` recomputes activations there (in --quick too, so the path is exercised)
        ckpt = length == lengths[-1]
        if ckpt:
            lora.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False}
            )
            lora.enable_input_require_grads()
        ids = torch.randint(0, model.config.vocab_size, (1, length), device=ns.device)

        def step(ids: Any = ids) -> None:
            with torch.autocast(ns.device.split(":")[0], dtype=torch.bfloat16, enabled=bf16):
                loss = lora(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        rate = _rate(step, length, ns)
        # forward 2N + input-gradient backward 2N per token (LoRA: the frozen weights get none);
        # the recomputation under checkpointing is not counted as useful work
        out[f"train_{length}_tokens_per_s"] = round(rate, 1)
        out[f"train_{length}_tflops"] = round(4 * n_params * rate / 1e12, 3)
        out[f"train_{length}_checkpointing"] = ckpt
    return out


def _rate(fn: Callable[[], None], units: int, ns: argparse.Namespace, reps: int = 5) -> float:
    fn()
    fn()
    _sync(ns.device)
    t = time.perf_counter()
    for _ in range(reps if not ns.quick else 1):
        fn()
    _sync(ns.device)
    return units * (reps if not ns.quick else 1) / (time.perf_counter() - t)


def vllm_report() -> dict[str, Any]:
    spec = importlib.util.find_spec("vllm")
    return {
        "importable": spec is not None,
        "note": "not run" if spec is None else "present; serving is not part of this check",
    }


CHECKS: dict[str, Callable[[argparse.Namespace, Path], dict[str, Any]]] = {
    "env": check_env,
    "sft_lora": check_sft_lora,
    "sft_full": check_sft_full,
    "sft_reopd": check_sft_reopd,
    "student_generate": check_student_generate,
    "rl_update": check_rl_update,
    "limits": check_limits,
    "smollm2_shape": check_smollm2_shape,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", required=True, help="folder for check_cuda.json")
    p.add_argument("--quick", action="store_true", help="toy sizes (the CPU test)")
    p.add_argument("--only", default="", help="comma-separated check names (default: all)")
    ns = p.parse_args(argv)
    names = [n for n in ns.only.split(",") if n] or list(CHECKS)
    unknown = sorted(set(names) - set(CHECKS))
    if unknown:
        print(f"check_cuda: unknown checks {unknown}; known: {sorted(CHECKS)}", file=sys.stderr)
        return 2
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "device": ns.device,
        "quick": ns.quick,
        "vllm": vllm_report(),
        "checks": {},
    }
    with tempfile.TemporaryDirectory(prefix="check_cuda_") as tmp:
        for name in names:
            t = time.perf_counter()
            try:
                res = {"ok": True, **CHECKS[name](ns, Path(tmp))}
            except Exception as exc:  # every check reports; one failure does not stop the rest
                res = {
                    "ok": False,
                    "error": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc()[-3000:],
                }
            res["seconds"] = round(time.perf_counter() - t, 2)
            results["checks"][name] = res
            shown = {k: v for k, v in res.items() if k != "traceback"}
            print(f"[check_cuda] {name}: {json.dumps(shown, default=str)}", flush=True)
            (out / "check_cuda.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    failed = [n for n, r in results["checks"].items() if not r["ok"]]
    print(
        f"[check_cuda] {len(names) - len(failed)} passed, {len(failed)} failed"
        + (f": {failed}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
