"""SFT trainer throughput against the raw training step of the same model and sequence length.

Physical limit: a hand-written loop doing what one training step cannot avoid, on the same peft
model (LoRA r=16 on all linear layers, or full fine-tuning), the same sequence length, the same
supervised positions and the same bf16 autocast setting: the backbone over every token and the
LM head over the supervised positions only (``logits_to_keep``), ``cross_entropy``, ``backward``,
``AdamW.step()``, ``zero_grad()``. The trainer: ``WeightedSFTTrainer`` (``captain learn sft``'s
trainer: padding-free collator, per-turn weights, its LM head (trl's fused head on CUDA, the kept
supervised logits elsewhere), gradient clipping, cosine schedule, logging) on sequences of that
length, a quarter of whose tokens are supervised. (Until 2026-12-06 the raw step scored every
position with full logits, which the trainer then also did on CPUs; results/sft.md keeps both.) Both
are timed in the same process and interleaved: after every trainer step a raw step runs on the same
model (the machine is shared, so adjacent steps see the same load); the first pair is warm-up.
Reported: tokens/s of the best step of each and their ratio, and the median of the paired ratios.
Goal: trainer tokens/s >= 80% of raw.

Run: ``.venv/bin/python benchmarks/bench_sft.py [--base smollm2|PATH|tiny] [--seq-len 2048]
[--steps 4] [--method lora|full] [--bf16 auto|on|off] [--device cpu|cuda] [--json out.json]``.
``--base tiny`` builds a random 4-layer Qwen2 from config (a quick sanity mode).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

from captain_ros.learn.models import bf16_supported, resolve_base
from captain_ros.learn.sft import SftOptions, build_trainer
from captain_ros.learn.tokenize import IGNORE, TokenizedSequence


def tiny_base(folder: Path) -> Path:
    """A random Qwen2 (4 layers, hidden 256) with a byte-level tokenizer, saved to ``folder``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(
        ["robot.move_to(x) print(r)"] * 10,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<unk>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|im_end|>")
    fast.chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(fast),
            hidden_size=256,
            intermediate_size=768,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=8192,
        )
    )
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def synthetic(vocab: int, seq_len: int, n: int) -> list[TokenizedSequence]:
    """Sequences shaped like an episode: 4 supervised spans (a quarter of the tokens)."""
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        ids = torch.randint(0, vocab, (seq_len,), generator=g).tolist()
        labels, weights = [IGNORE] * seq_len, [0.0] * seq_len
        span = seq_len // 16
        for k in range(4):
            start = k * seq_len // 4 + seq_len // 8
            for i in range(start, start + span):
                labels[i], weights[i] = ids[i], 1.0
        out.append(TokenizedSequence(tuple(ids), tuple(labels), tuple(weights), "bench", (1,)))
    return out


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


class RawStep:
    """The raw step: forward (logits at the supervised positions only), cross-entropy, backward,
    AdamW step."""

    def __init__(self, model: Any, seq: TokenizedSequence, bf16: bool, device: str) -> None:
        self.model, self.bf16, self.device = model, bf16, device
        self.opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.0)
        where = next(model.parameters()).device
        self.ids = torch.tensor([list(seq.input_ids)], device=where)
        labels = torch.tensor(list(seq.labels[1:]), device=where)
        self.keep = (labels != IGNORE).nonzero().squeeze(-1)
        self.targets = labels[self.keep]

    def __call__(self) -> float:
        was_training = self.model.training
        self.model.train()
        _sync(self.device)
        t = time.perf_counter()
        with torch.autocast(self.device.split(":")[0], dtype=torch.bfloat16, enabled=self.bf16):
            logits = self.model(input_ids=self.ids, logits_to_keep=self.keep).logits[0]
        loss = torch.nn.functional.cross_entropy(logits.float(), self.targets)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        _sync(self.device)
        self.model.train(was_training)
        return time.perf_counter() - t


class Paired(TrainerCallback):
    """After every trainer step, one raw step on the same model: each trainer step (time between
    the end of the previous raw step and the end of this step: data, collation, forward,
    backward, clipping, optimizer, scheduler, logging) is paired with a raw step run right after
    it, so both see the same load on a shared machine."""

    def __init__(self, raw: RawStep, device: str) -> None:
        self.raw, self.device = raw, device
        self.start = 0.0
        self.trainer_s: list[float] = []
        self.raw_s: list[float] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.start = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        _sync(self.device)
        self.trainer_s.append(time.perf_counter() - self.start)
        self.raw_s.append(self.raw())
        self.start = time.perf_counter()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="smollm2", help="smollm2 | a model folder | tiny")
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=4, help="timed steps per block")
    ap.add_argument("--method", default="lora", choices=("lora", "full"))
    ap.add_argument("--bf16", default="off", choices=("auto", "on", "off"))
    ap.add_argument("--device", default="cpu", help="cpu | cuda")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tmp = Path(tempfile.mkdtemp(prefix="bench_sft_"))
    base = tiny_base(tmp / "tiny") if args.base == "tiny" else resolve_base(args.base)
    bf16 = bf16_supported(args.device) if args.bf16 == "auto" else args.bf16 == "on"
    opts = SftOptions(
        data="(synthetic)",
        base=str(base),
        out=str(tmp / "out"),
        method=args.method,
        max_steps=args.steps + 1,
        grad_accum=1,
        warmup=0.0,
        progress=False,
        save_steps=10_000,
        bf16="on" if bf16 else "off",
        device=args.device,
    )
    tok = AutoTokenizer.from_pretrained(str(base))
    vocab = AutoModelForCausalLM.from_pretrained(str(base)).config.vocab_size
    seqs = synthetic(vocab, args.seq_len, args.steps + 1)
    prep = {"tokenizer": tok, "base": base, "train": seqs, "val": []}

    trainer, _ = build_trainer(opts, prep, tmp / "out", args.device, bf16)
    model = trainer.model  # the same peft model (and fused head) the trainer trains
    paired = Paired(RawStep(model, seqs[0], bf16, args.device), args.device)
    trainer.add_callback(paired)
    trainer.train()
    train_s, raw = paired.trainer_s[1:], paired.raw_s[1:]  # the first pair is warm-up
    ratios = [r / t for r, t in zip(raw, train_s, strict=True)]
    res = {
        "base": args.base,
        "method": args.method,
        "bf16": bf16,
        "seq_len": args.seq_len,
        "device": args.device,
        "threads": args.threads,
        "raw_s_per_step": raw,
        "trainer_s_per_step": train_s,
        "paired_ratios": ratios,
        "raw_tokens_per_s": args.seq_len / min(raw),
        "trainer_tokens_per_s": args.seq_len / min(train_s),
        "ratio_median_of_pairs": statistics.median(ratios),
        "ratio_best": min(raw) / min(train_s),
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "machine": platform.processor() or platform.machine(),
        "load_avg": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(
        f"{args.base} {args.method} seq {args.seq_len} bf16={bf16}: best step raw "
        f"{res['raw_tokens_per_s']:.0f} tok/s, trainer {res['trainer_tokens_per_s']:.0f} tok/s "
        f"(ratio {res['ratio_best']:.1%}); median of paired ratios "
        f"{res['ratio_median_of_pairs']:.1%} (load {res['load_avg'][0]:.1f})"
    )
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
