"""``captain learn sft``: fine-tune a base model on dataset rows, save a deployable student.

Steps: read and validate the rows (:mod:`~captain_ros.learn.rows`), tokenize them with the
deployment renderer into whole-episode sequences with assistant-only, per-turn weighted labels
(:mod:`~captain_ros.learn.tokenize`), train with :class:`~captain_ros.learn.trainer.WeightedSFTTrainer`
(peft LoRA, r=16 on all linear layers by default, or full fine-tuning), then write the output
folder ``OUT``:

- ``OUT/`` itself: the student as a plain transformers folder (LoRA merged into the weights,
  config, ``model.safetensors``, tokenizer with the chat template training used, generation
  config). ``captain run --policy transformers --model-folder OUT``, ``transformers serve OUT``
  and vLLM load it as is;
- ``OUT/adapter/``: the LoRA adapter alone (peft layout), unless disabled;
- ``OUT/checkpoints/``: trainer checkpoints (optimizer, scheduler, RNG state) for ``--resume``;
- ``OUT/train_log.jsonl``: one line per step (loss, learning rate, grad norm, tokens/s) and per
  evaluation (validation loss); ``OUT/sft_config.json``: options, base, dataset counts and a
  fingerprint of the token sequences; ``OUT/metrics.json``: final figures.

Data-parallel: under ``torchrun`` or ``accelerate launch`` every process trains on its share of
each step (the loss counts the whole step's tokens, see :mod:`~captain_ros.learn.trainer`) and
rank 0 alone writes the output folder (docs/learn_sft.md).

Defaults follow CaPtain's SFT (appendix C) where it applies to a small CPU student: gradient
clipping at 1.0, bf16 where the hardware computes it natively, 1.5 epochs; LoRA (rather than the
paper's full fine-tuning) because it is what fits this 2-core machine. The learning rate defaults
to 2e-4 for LoRA and 2e-5 for full fine-tuning, with cosine decay after a 3% warm-up.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from captain_ros.learn.collate import pack_sequences
from captain_ros.learn.rows import DatasetError, load_rows, split_rows
from captain_ros.learn.sft_options import (  # noqa: F401 - METHODS, BF16_MODES re-exported
    BF16_MODES,
    CHECKPOINT_ABOVE_TOKENS,
    METHODS,
    RUN_LENGTH,
    SftError,
    SftOptions,
)
from captain_ros.learn.sft_state import (
    checkpoint_step,
    list_checkpoints,
    load_adapter_weights,
    restore_checkpoint,
    resume_point,
    save_student,
)
from captain_ros.learn.tokenize import TokenizedSequence, tokenize_rows


def _fingerprint(opts: SftOptions, base: Path, seqs: list[TokenizedSequence]) -> str:
    h = hashlib.sha256()
    keep = {k: v for k, v in asdict(opts).items() if k not in RUN_LENGTH}
    if not opts.pack_tokens:  # unpacked runs keep the fingerprint they had before the option
        del keep["pack_tokens"]
    h.update(json.dumps(keep, sort_keys=True).encode())
    h.update((base / "config.json").read_bytes())
    for s in seqs:
        h.update(json.dumps([s.input_ids, s.labels, s.weights]).encode())
    return h.hexdigest()


def _dataset(seqs: list[TokenizedSequence], pack_tokens: int = 0, seed: int = 0) -> Any:
    """The sequences as a ``datasets.Dataset``; with ``pack_tokens``, one row per pack of whole
    sequences (:func:`~captain_ros.learn.collate.pack_sequences`), ``lengths`` marking them."""
    from datasets import Dataset

    if not pack_tokens:
        return Dataset.from_dict(
            {
                "input_ids": [list(s.input_ids) for s in seqs],
                "labels": [list(s.labels) for s in seqs],
                "weights": [list(s.weights) for s in seqs],
            }
        )
    packs = pack_sequences([len(s.input_ids) for s in seqs], pack_tokens, seed)
    return Dataset.from_dict(
        {
            "input_ids": [[t for i in p for t in seqs[i].input_ids] for p in packs],
            "labels": [[t for i in p for t in seqs[i].labels] for p in packs],
            "weights": [[w for i in p for w in seqs[i].weights] for p in packs],
            "lengths": [[len(seqs[i].input_ids) for i in p] for p in packs],
        }
    )


def prepare(opts: SftOptions, out: Path) -> dict[str, Any]:
    """Rows -> tokenizer, sequences and run metadata (``OUT/sft_config.json``; on resume, checks
    that data and options are those the checkpoints were trained on)."""
    from transformers import AutoConfig, AutoTokenizer

    from captain_ros.learn.models import resolve_base
    from captain_ros.policy.chat_render import effective_template

    rows = load_rows(opts.data)
    profiles = sorted({r.profile for r in rows})
    if len(profiles) > 1:
        raise DatasetError(
            f"{opts.data}: rows of several prompt profiles ({', '.join(profiles)}); "
            "a student is trained and deployed with one"
        )
    train_rows, val_rows = split_rows(rows, opts.val_fraction, opts.seed)
    base = resolve_base(opts.base)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    tokenizer.chat_template = effective_template(tokenizer)
    config = AutoConfig.from_pretrained(str(base))
    max_len = opts.max_length or min(int(getattr(config, "max_position_embeddings", 4096)), 32768)
    train, train_stats = tokenize_rows(tokenizer, train_rows, max_len)
    if not train:
        raise DatasetError(
            f"{opts.data}: no supervised tokens in the training rows "
            "(every assistant turn has weight 0 or is longer than max_length)"
        )
    val, val_stats = tokenize_rows(tokenizer, val_rows, max_len)
    meta = {
        "options": asdict(opts),
        "base_folder": str(base),
        "max_length": max_len,
        "profile": profiles[0] if profiles else "default",
        "rows": {"total": len(rows), "train": len(train_rows), "val": len(val_rows)},
        "train": train_stats.to_dict(),
        "val": val_stats.to_dict(),
        # sum of squared sequence lengths: the attention FLOPs of an epoch (model-FLOPs reports)
        "train_length_sq": sum(len(s.input_ids) ** 2 for s in train),
        "fingerprint": _fingerprint(opts, base, train + val),
    }
    if opts.pack_tokens:
        packs = len(pack_sequences([len(s.input_ids) for s in train], opts.pack_tokens, opts.seed))
        meta["packing"] = {
            "budget_tokens": opts.pack_tokens,
            "rows": packs,
            "fill": sum(len(s.input_ids) for s in train) / (packs * opts.pack_tokens),
        }
    meta_path = out / "sft_config.json"
    if opts.resume and meta_path.exists():
        old = json.loads(meta_path.read_text()).get("fingerprint")
        if old != meta["fingerprint"]:
            raise SftError(
                f"{out}: the checkpoints were trained on other data or options; "
                "resume needs the same --data and options"
            )
    out.mkdir(parents=True, exist_ok=True)
    if main_process():
        meta_path.write_text(json.dumps(meta, indent=2))
    return {"tokenizer": tokenizer, "base": base, "train": train, "val": val, "meta": meta}


def main_process() -> bool:
    """Whether this process writes the run's files: always, except under ``torchrun`` /
    ``accelerate launch`` (data-parallel), where rank 0 does."""
    return int(os.environ.get("RANK", "0")) == 0


def build_trainer(
    opts: SftOptions,
    prep: dict[str, Any],
    out: Path,
    device: str,
    bf16: bool,
    callbacks: Sequence[Any] = (),
) -> tuple[Any, Any]:
    """The trainer for a prepared run, and its :class:`~captain_ros.learn.trainer.RunLog`."""
    import torch
    from transformers import AutoModelForCausalLM, PrinterCallback
    from trl import SFTConfig

    from captain_ros.learn.collate import (
        PackedCollator,
        register_autocast_attention,
        register_packed_attention,
    )
    from captain_ros.learn.trainer import RunLog, WeightedSFTTrainer

    # several sequences per row: each attends within itself, with no N x N mask; either way
    # attention runs in the autocast dtype, on CPUs too (collate.py)
    packed = opts.pack_tokens > 0 or opts.batch_size > 1
    attn = register_packed_attention() if packed else register_autocast_attention()
    model = AutoModelForCausalLM.from_pretrained(
        str(prep["base"]), dtype=torch.float32, attn_implementation=attn
    )
    peft_config = None
    if opts.method == "lora":
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=opts.lora_r,
            lora_alpha=opts.lora_alpha,
            lora_dropout=opts.lora_dropout,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
    has_val = bool(prep["val"])
    longest = max(len(s.input_ids) for s in prep["train"] + prep["val"])
    longest = max(longest, opts.pack_tokens) * opts.batch_size
    checkpointing = {"on": True, "off": False}.get(
        opts.gradient_checkpointing, longest > CHECKPOINT_ABOVE_TOKENS
    )
    args = SFTConfig(
        output_dir=str(out / "checkpoints"),
        per_device_train_batch_size=opts.batch_size,
        per_device_eval_batch_size=1,
        gradient_accumulation_steps=opts.grad_accum,
        learning_rate=opts.lr,
        num_train_epochs=opts.epochs,
        max_steps=opts.max_steps,
        lr_scheduler_type="cosine",
        warmup_steps=opts.warmup,
        weight_decay=opts.weight_decay,
        max_grad_norm=opts.max_grad_norm,
        bf16=bf16,
        use_cpu=device == "cpu",
        seed=opts.seed,
        data_seed=opts.seed,
        logging_steps=1,
        eval_strategy="steps" if has_val else "no",
        eval_steps=opts.eval_steps,
        save_strategy="steps",
        save_steps=opts.save_steps,
        save_total_limit=opts.save_total_limit,
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=False,
        dataset_kwargs={"skip_prepare_dataset": True},
        max_length=None,
        packing=False,
        include_num_input_tokens_seen="all",
        dataloader_num_workers=0,
        activation_checkpointing=checkpointing,
    )
    run_log = RunLog(out / "train_log.jsonl", opts.progress)
    trainer = WeightedSFTTrainer(
        model=model,
        args=args,
        data_collator=PackedCollator(lengths=packed),
        train_dataset=_dataset(prep["train"], opts.pack_tokens, opts.seed),
        eval_dataset=_dataset(prep["val"]) if has_val else None,
        processing_class=prep["tokenizer"],
        peft_config=peft_config,
        callbacks=[run_log, *callbacks],
    )
    trainer.remove_callback(PrinterCallback)  # RunLog shows and records the same figures
    if opts.init_adapter:
        load_adapter_weights(trainer.model, Path(opts.init_adapter))
    return trainer, run_log


def run_sft(opts: SftOptions, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Train and save; returns the figures also written to ``OUT/metrics.json``.

    ``callbacks`` are extra ``transformers.TrainerCallback`` objects (e.g. an early stop).
    """
    import torch

    from captain_ros.learn.models import bf16_supported
    from captain_ros.learn.threads import thread_note

    out = Path(opts.out)
    existing = list_checkpoints(out / "checkpoints")
    if existing and not opts.resume:
        raise SftError(
            f"{out} already holds checkpoints; pass --resume to continue them or "
            "choose another --out"
        )
    t_start = time.perf_counter()
    prep = prepare(opts, out)
    device = opts.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if opts.threads:
        torch.set_num_threads(opts.threads)
    threads = torch.get_num_threads()  # else torch's own: $OMP_NUM_THREADS, else the cores
    world = int(os.environ.get("WORLD_SIZE", "1"))
    bf16 = {"on": True, "off": False}.get(opts.bf16)
    bf16 = bf16_supported(device) if bf16 is None else bf16
    trainer, run_log = build_trainer(opts, prep, out, device, bf16, callbacks)
    cores = os.cpu_count() or 1
    note = (
        None
        if opts.threads
        else thread_note("captain learn sft", threads, device, world, cores, os.environ)
    )
    if note and main_process():
        print(note, file=sys.stderr, flush=True)
    start = resume_point(existing, opts.max_steps)
    t_train = time.perf_counter()
    if start is not None and checkpoint_step(start) == opts.max_steps:
        # the run is cut at a checkpoint: nothing left to train (Trainer would step once)
        done = restore_checkpoint(trainer, start)
        train_loss, train_s, tokens_per_s = done["loss"], done["train_s"], done["tokens_per_s"]
    else:
        train_loss = trainer.train(
            resume_from_checkpoint=str(start) if start else None
        ).training_loss
        train_s = time.perf_counter() - t_train
        tokens_per_s = run_log.tokens_per_s(trainer.state)
    metrics: dict[str, Any] = {
        "train_loss": train_loss,
        "steps": trainer.state.global_step,
        "train_s": train_s,
        "wall_s": 0.0,
        "bf16": bf16,
        "device": device,
        "threads": threads,
        "tokens_seen": trainer.state.num_input_tokens_seen,
        "tokens_per_s": tokens_per_s,
        "resumed_from": str(start) if start else None,
    }
    if prep["val"]:
        metrics["eval_loss"] = trainer.evaluate()["eval_loss"]  # every process takes part
    metrics["processes"] = int(trainer.args.world_size)
    if trainer.is_world_process_zero():
        save_student(trainer, prep["tokenizer"], out, opts.save_adapter)
        metrics["wall_s"] = time.perf_counter() - t_start
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return metrics
